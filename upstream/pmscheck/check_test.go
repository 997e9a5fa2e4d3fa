package pmscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

func check(t *testing.T, sim *pmsim.Sim, cfg Config) *Report {
	t.Helper()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg.Client.BaseURL = srv.URL
	cfg.Brand = "aurora"
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The schema files compile, and a generated record of the healthy
// simulator is valid while a drifted one is not.
func TestSchemas(t *testing.T) {
	sc, err := compileSchemas()
	if err != nil {
		t.Fatal(err)
	}
	var rec any
	_ = json.Unmarshal(pmsim.New(pmsim.Config{Seed: 1}).Records("aurora")[0], &rec)
	if p := validate(sc.hotel, rec); len(p) != 0 {
		t.Errorf("healthy record: %+v", p)
	}
	_ = json.Unmarshal(pmsim.New(pmsim.Config{Seed: 1, Drift: pmsim.Drift{Retype: []string{"created_at"}}}).Records("aurora")[0], &rec)
	if p := validate(sc.hotel, rec); len(p) != 1 || p[0].field != "created_at" {
		t.Errorf("retyped created_at: %+v", p)
	}
}

// The check walks with the edge's client: a first attempt that fails with
// 500 is retried, as the edge would, and is no broken rule; one that keeps
// failing is a failed walk.
func TestCheckRetriesLikeTheEdge(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 1})
	sim.SetFaults(pmsim.Faults{FailFirst: 1, ErrorStatus: 500})
	r := check(t, sim, Config{Client: pms.ClientConfig{Retry: pms.RetryConfig{WaitMin: 1, WaitMax: 1}}})
	if !r.OK || r.Answers.Statuses["500"] != 1 || r.Records.Walked != 40 {
		t.Errorf("one 500 then healthy: ok %v, statuses %v, %+v; violations %+v", r.OK, r.Answers.Statuses, r.Records, r.Violations)
	}
	sim.SetFaults(pmsim.Faults{ErrorStatus: 503})
	r = check(t, sim, Config{Client: pms.ClientConfig{Retry: pms.RetryConfig{WaitMin: 1, WaitMax: 1}}})
	if r.OK || r.Result != nil || r.Violations[len(r.Violations)-1].Rule != RuleWalk {
		t.Errorf("always 503: ok %v, violations %+v", r.OK, r.Violations)
	}
}

// A 404 on the list route (a wrong base URL) breaks the status rule.
func TestCheckListRoute404(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 1})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	r, err := Run(context.Background(), Config{Client: pms.ClientConfig{BaseURL: srv.URL + "/wrong"}, Brand: "aurora"})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Violations[0].Rule != RuleStatus || !strings.Contains(r.Violations[0].Message, "404") {
		t.Errorf("violations %+v", r.Violations)
	}
}

// Compare tells removed from now rejected, names changed public fields and
// ignores records rejected on both sides.
func TestCompare(t *testing.T) {
	uuid := func(c string) string { return strings.Repeat(c, 8) + "-0000-4000-8000-000000000000" }
	p := func(id, name, status string) *upstream.Item {
		return upstream.NewItem(mapping.Property{ID: uuid(id), Name: name, Status: status, Timezone: "UTC"})
	}
	base := NewResult("aurora", "live", "", []*upstream.Item{p("a", "A", "active"), p("b", "B", "active"), p("c", "C", "active")},
		[]*mapping.Rejection{{HotelID: "x", Reason: mapping.ReasonInvalidID}})
	cur := NewResult("aurora", "live", "", []*upstream.Item{p("a", "A2", "inactive"), p("d", "D", "active")},
		[]*mapping.Rejection{{HotelID: strings.ToUpper(uuid("b")), Reason: mapping.ReasonEmptyName}, {HotelID: "x", Reason: mapping.ReasonInvalidID}})
	d := Compare(base, cur)
	if !slices.Equal(d.Added, []string{uuid("d")}) || !slices.Equal(d.Removed, []string{uuid("c")}) ||
		len(d.Changed) != 1 || !slices.Equal(d.Changed[0].Fields, []string{"name", "status"}) ||
		len(d.Rejected) != 1 || d.Rejected[0] != (Rejected{ID: uuid("b"), Reason: mapping.ReasonEmptyName}) || !d.Breaking() {
		t.Errorf("diff %+v", d)
	}
	if d := Compare(base, base); !d.Empty() || d.Breaking() {
		t.Errorf("a result against itself: %+v", d)
	}
}

// A saved result loads back; anything else is refused.
func TestSaveLoad(t *testing.T) {
	r := check(t, pmsim.New(pmsim.Config{Seed: 3}), Config{})
	path := filepath.Join(t.TempDir(), "result.json")
	if err := r.Result.SaveFile(path); err != nil {
		t.Fatal(err)
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := LoadResult(bytes.NewReader(buf))
	if err != nil || !Compare(r.Result, back).Empty() {
		t.Fatalf("load: %v", err)
	}
	for _, bad := range []string{`{}`, `{"version":1,"properties":[{"name":"no id"}]}`, `{"version":1,"extra":1}`, `[]`} {
		if _, err := LoadResult(strings.NewReader(bad)); err == nil {
			t.Errorf("%s loaded", bad)
		}
	}
}

// failGets answers 500 to every get whose path fails picks, and passes the
// rest (the list included) to next.
func failGets(next http.Handler, fails func(path string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Count(r.URL.Path, "/") == 6 && fails(r.URL.Path) { // /internal/v2/brands/b/hotels/id
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":"internal_server_error"}`))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// docs/contract.md section 18: a get that still answers 500 after the edge's own
// retries is a flaky PMS, counted and noted, not a broken rule (the old
// check printed BROKEN [get] and failed); only when no get succeeds at all
// is the get route broken.
func TestCheckTransientGetsAreNotBroken(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 1})
	fast := pms.ClientConfig{Retry: pms.RetryConfig{WaitMin: 1, WaitMax: 1}}
	var first string
	one := failGets(sim, func(p string) bool {
		if first == "" && !strings.HasSuffix(p, unknownID) {
			first = p
		}
		return p == first
	})
	srv := httptest.NewServer(one)
	defer srv.Close()
	cfg := Config{Client: fast, Brand: "aurora"}
	cfg.Client.BaseURL = srv.URL
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || r.Answers.TransientGets != 1 || r.Answers.Statuses["500"] != 3 {
		t.Errorf("one get always 500: ok %v, transient %d, statuses %v, violations %+v",
			r.OK, r.Answers.TransientGets, r.Answers.Statuses, r.Violations)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "BROKEN") || !strings.Contains(text.String(), "1 get(s) still failed") {
		t.Errorf("report:\n%s", text.String())
	}

	all := httptest.NewServer(failGets(sim, func(p string) bool { return !strings.HasSuffix(p, unknownID) }))
	defer all.Close()
	cfg.Client.BaseURL = all.URL
	if r, err = Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if r.OK || len(r.Violations) != 1 || r.Violations[0].Rule != RuleGet || r.Violations[0].Count != DefaultGets {
		t.Errorf("every get 500: ok %v, violations %+v", r.OK, r.Violations)
	}
}

// docs/contract.md section 18: a rejected record on two overlapping pages is one
// rejected record (the overlap is the paging rule's), not two.
func TestCheckOverlapRejectsOnce(t *testing.T) {
	recs := pmsim.New(pmsim.Config{Seed: 1}).Records("aurora")
	bad := []byte(`{"hotel_id":"not-a-uuid","display_name":"Bad"}`)
	pages := map[string]string{
		"":   fmt.Sprintf(`{"hotels":[%s,%s],"nextCursor":"c2"}`, recs[0], bad),
		"c2": fmt.Sprintf(`{"hotels":[%s,%s],"nextCursor":null}`, bad, recs[1]),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		page, ok := pages[r.URL.Query().Get("cursor")]
		if !ok || r.URL.Path != listPath("aurora") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"hotel_not_found"}`))
			return
		}
		_, _ = w.Write([]byte(page))
	}))
	defer srv.Close()
	r, err := Run(context.Background(), Config{Client: pms.ClientConfig{BaseURL: srv.URL}, Brand: "aurora", Gets: -1})
	if err != nil {
		t.Fatal(err)
	}
	var rejected []string
	for _, ids := range r.Rejected {
		rejected = append(rejected, ids...)
	}
	if r.Records != (Records{Walked: 3, Mapped: 2, Rejected: 1}) || !slices.Equal(rejected, []string{"not-a-uuid"}) {
		t.Errorf("records %+v, rejected %v; want 3 walked, 2 mapped, 1 rejected once", r.Records, r.Rejected)
	}
	if !slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Rule == RulePaging }) {
		t.Errorf("the overlap is not reported: %+v", r.Violations)
	}
	if len(r.Result.Rejected) != 1 {
		t.Errorf("the saved result lists %d rejections, want 1", len(r.Result.Rejected))
	}
}
