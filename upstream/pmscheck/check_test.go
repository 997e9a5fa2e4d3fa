package pmscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

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
	r := check(t, sim, Config{Client: upstream.ClientConfig{Retry: upstream.RetryConfig{WaitMin: 1, WaitMax: 1}}})
	if !r.OK || r.Answers.Statuses["500"] != 1 || r.Records.Walked != 40 {
		t.Errorf("one 500 then healthy: ok %v, statuses %v, %+v; violations %+v", r.OK, r.Answers.Statuses, r.Records, r.Violations)
	}
	sim.SetFaults(pmsim.Faults{ErrorStatus: 503})
	r = check(t, sim, Config{Client: upstream.ClientConfig{Retry: upstream.RetryConfig{WaitMin: 1, WaitMax: 1}}})
	if r.OK || r.Result != nil || r.Violations[len(r.Violations)-1].Rule != RuleWalk {
		t.Errorf("always 503: ok %v, violations %+v", r.OK, r.Violations)
	}
}

// A 404 on the list route (a wrong base URL) breaks the status rule.
func TestCheckListRoute404(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 1})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	r, err := Run(context.Background(), Config{Client: upstream.ClientConfig{BaseURL: srv.URL + "/wrong"}, Brand: "aurora"})
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
	var buf bytes.Buffer
	if err := r.Result.Save(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := LoadResult(bytes.NewReader(buf.Bytes()))
	if err != nil || !Compare(r.Result, back).Empty() {
		t.Fatalf("load: %v", err)
	}
	for _, bad := range []string{`{}`, `{"version":1,"properties":[{"name":"no id"}]}`, `{"version":1,"extra":1}`, `[]`} {
		if _, err := LoadResult(strings.NewReader(bad)); err == nil {
			t.Errorf("%s loaded", bad)
		}
	}
}
