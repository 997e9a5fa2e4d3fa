package edge_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"go.uber.org/goleak"
)

// producedCodes records every problem code the suite's requests produced.
var producedCodes sync.Map

// notProducibleInV1 are codes no v1 request can produce yet, with why.
var notProducibleInV1 = map[problem.Code]string{
	problem.PropertyAccessDenied: "no v1 route is property-scoped (docs/contract.md section 3)",
}

// TestMain checks, after a full run, that every other code of docs/contract.md
// section 7 was produced by at least one request of the suite.
func TestMain(m *testing.M) {
	if os.Getenv(simChildEnv) != "" { // the simulator's process of a benchmark
		os.Exit(serveSimChild())
	}
	code := m.Run()
	if code == 0 {
		// Every goroutine a request started has ended (docs/resilience.md).
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goroutines left behind: %v\n", err)
			code = 1
		}
	}
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		var missing []string
		for _, e := range problem.All() {
			if _, ok := producedCodes.Load(string(e.Code)); !ok && notProducibleInV1[e.Code] == "" {
				missing = append(missing, string(e.Code))
			}
		}
		if missing != nil {
			fmt.Fprintf(os.Stderr, "FAIL: no test request produced these codes: %s\n", strings.Join(missing, ", "))
			code = 1
		}
	}
	os.Exit(code)
}

func recordCode(body []byte) {
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &p) == nil && p.Code != "" {
		producedCodes.Store(p.Code, true)
	}
}

// panicking is a Catalog whose every call panics with internals in the
// message, to prove none of them reach the partner.
type panicking struct{}

var _ upstream.Catalog = panicking{}

func (panicking) Snapshot(context.Context) (*upstream.Snapshot, error) {
	panic("boom: dial tcp 10.1.2.3:9000 pms.internal")
}

func (panicking) Property(context.Context, string) (*upstream.Item, error) {
	panic(fmt.Errorf("boom: %w", context.DeadlineExceeded))
}

func TestPanicIsInternalError(t *testing.T) {
	h := newHarness(t, harnessOptions{catalogs: func(_, sb upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		return panicking{}, sb
	}})
	id := activeIDs(t, h.live, testBrand)[0]
	for _, path := range []string{"/v1/properties", "/v1/properties/" + id} {
		req := request{path: path, key: "live", headers: map[string][]string{"Svc-Correlation-Id": {"corr-1"}}}
		res := h.do(req)
		p := wantProblem(t, req, res, problem.InternalError)
		for _, leak := range []string{"boom", "10.1.2.3", "pms.internal", "deadline", "panic", "goroutine"} {
			if strings.Contains(string(res.body), leak) {
				t.Errorf("500 body leaks %q: %s", leak, res.body)
			}
		}
		if res.header.Get("Svc-Correlation-Id") != "corr-1" {
			t.Errorf("500 lost the correlation id")
		}
		if !strings.Contains(h.logs.String(), p.RequestID) || !strings.Contains(h.logs.String(), "boom") {
			t.Errorf("the panic was not logged with the request id")
		}
	}
	// The server survives and serves on.
	req := request{path: "/v1/", key: "live"}
	wantOK(t, req, h.do(req))
}
