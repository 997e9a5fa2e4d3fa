package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmscheck"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// checkRun is one run of edge pms check.
type checkRun struct {
	err            error
	stdout, stderr string
}

// exitCode is the status main would exit with.
func (c checkRun) exitCode() int {
	var ee *exitError
	switch {
	case c.err == nil:
		return 0
	case errors.As(c.err, &ee):
		return ee.code
	}
	return 1
}

func runCheck(t *testing.T, env map[string]string, args ...string) checkRun {
	t.Helper()
	var out, errOut strings.Builder
	err := run(context.Background(), append([]string{"edge", "pms", "check"}, args...), mapEnv(env), &out, &errOut)
	return checkRun{err: err, stdout: out.String(), stderr: errOut.String()}
}

// serveSim serves a simulator on loopback and returns the env of a check
// against it.
func serveSim(t *testing.T, cfg pmsim.Config) (*pmsim.Sim, map[string]string) {
	t.Helper()
	sim := pmsim.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, map[string]string{"PMS_BASE_URL": srv.URL, "EDGE_BRAND": "aurora"}
}

func jsonReport(t *testing.T, c checkRun) *pmscheck.Report {
	t.Helper()
	var r pmscheck.Report
	if err := json.Unmarshal([]byte(c.stdout), &r); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s\nstderr: %s", err, c.stdout, c.stderr)
	}
	return &r
}

// mappedIDs are the ids the edge's mapping gives the brand's records, and
// the rejected ids by reason.
func mappedIDs(sim *pmsim.Sim) (map[string]bool, map[mapping.Reason][]string) {
	ok, rejected := map[string]bool{}, map[mapping.Reason][]string{}
	for _, raw := range sim.Records("aurora") {
		p, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora"})
		var rj *mapping.Rejection
		switch {
		case errors.As(err, &rj):
			rejected[rj.Reason] = append(rejected[rj.Reason], rj.HotelID)
		case err == nil:
			ok[p.ID] = true
		}
	}
	for _, ids := range rejected {
		slices.Sort(ids)
	}
	return ok, rejected
}

// TestPMSCheckHealthySimulator: against the simulator the check exits 0
// and reports the simulator's known unmappable records, by reason, with
// their ids (docs/contract.md section 14).
func TestPMSCheckHealthySimulator(t *testing.T) {
	sim, env := serveSim(t, pmsim.Config{Seed: 7, PageSize: 9})
	c := runCheck(t, env, "--json")
	if c.exitCode() != 0 {
		t.Fatalf("exit %d (%v), want 0\n%s", c.exitCode(), c.err, c.stdout)
	}
	r := jsonReport(t, c)
	ok, rejected := mappedIDs(sim)
	if n := 0; true {
		for _, ids := range rejected {
			n += len(ids)
		}
		if n != pmsim.Unmappable(40) || r.Records.Rejected != n || r.Records.Mapped != len(ok) || r.Records.Walked != 40 {
			t.Errorf("records %+v, want 40 walked, %d mapped, %d rejected (pmsim.Unmappable)", r.Records, len(ok), n)
		}
	}
	if len(r.Rejected) != len(rejected) {
		t.Errorf("rejected by reason %v, want %v", r.Rejected, rejected)
	}
	for reason, ids := range rejected {
		if !slices.Equal(r.Rejected[reason], ids) {
			t.Errorf("rejected %s: %v, want %v", reason, r.Rejected[reason], ids)
		}
	}
	if len(r.Violations) != 0 || !r.OK || r.Answers.ListPages != 5 {
		t.Errorf("violations %+v, ok %v, %d pages (want none, true, 5 pages of 9)", r.Violations, r.OK, r.Answers.ListPages)
	}
	if len(r.Result.Properties) != len(ok) || r.Visible.Properties != len(ok) {
		t.Errorf("%d properties partners would see, want %d", len(r.Result.Properties), len(ok))
	}
	for _, raw := range sim.Records("aurora") { // no internal value ever in the report
		if strings.Contains(c.stdout, pmsim.LeakMarker) || strings.Contains(c.stdout, `"internal"`) {
			t.Fatalf("report holds internal data: %s", raw)
		}
	}

	human := runCheck(t, env)
	for reason, ids := range rejected {
		if !strings.Contains(human.stdout, "rejected "+string(reason)) || !strings.Contains(human.stdout, ids[0]) {
			t.Errorf("human report lacks rejection %s %s:\n%s", reason, ids[0], human.stdout)
		}
	}
	if human.exitCode() != 0 || !strings.Contains(human.stdout, "Result: OK") {
		t.Errorf("human report: exit %d\n%s", human.exitCode(), human.stdout)
	}
}

// TestPMSCheckBrokenContract: a simulator that renames or retypes a field
// the mapping reads, or breaks paging, fails the check (exit 1), and the
// report names the field or rule (docs/contract.md section 14).
func TestPMSCheckBrokenContract(t *testing.T) {
	for _, tc := range []struct {
		name        string
		drift       pmsim.Drift
		rule, field string
	}{
		{"rename display_name", pmsim.Drift{Rename: map[string]string{"display_name": "name"}}, pmscheck.RuleShape, "display_name"},
		{"rename hotel_id", pmsim.Drift{Rename: map[string]string{"hotel_id": "id"}}, pmscheck.RuleShape, "hotel_id"},
		{"rename time_zone", pmsim.Drift{Rename: map[string]string{"time_zone": "tz"}}, pmscheck.RuleShape, "time_zone"},
		{"retype last_modified_ms", pmsim.Drift{Retype: []string{"last_modified_ms"}}, pmscheck.RuleShape, "last_modified_ms"},
		{"retype lifecycle", pmsim.Drift{Retype: []string{"lifecycle"}}, pmscheck.RuleShape, "lifecycle"},
		{"cursor loop", pmsim.Drift{Paging: pmsim.PagingLoop}, pmscheck.RulePaging, "nextCursor"},
		{"empty cursor", pmsim.Drift{Paging: pmsim.PagingEmptyCursor}, pmscheck.RulePaging, "nextCursor"},
		{"overlapping pages", pmsim.Drift{Paging: pmsim.PagingOverlap}, pmscheck.RulePaging, "nextCursor"},
		{"renamed cursor", pmsim.Drift{Paging: pmsim.PagingRenameCursor}, pmscheck.RulePaging, "nextCursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, env := serveSim(t, pmsim.Config{Seed: 7, Drift: tc.drift})
			c := runCheck(t, env, "--json")
			if c.exitCode() != 1 {
				t.Fatalf("exit %d (%v), want 1\n%s", c.exitCode(), c.err, c.stdout)
			}
			r := jsonReport(t, c)
			found := false
			for _, v := range r.Violations {
				found = found || v.Rule == tc.rule && v.Field == tc.field
			}
			if !found || r.OK {
				t.Errorf("no %s violation of field %s in %+v", tc.rule, tc.field, r.Violations)
			}
			human := runCheck(t, env)
			if !strings.Contains(human.stdout, "["+tc.rule+"] field "+tc.field) || !strings.Contains(human.err.Error(), tc.field) {
				t.Errorf("human report does not name [%s] %s:\n%s\n%v", tc.rule, tc.field, human.stdout, human.err)
			}
		})
	}
}

// A report agrees with itself (docs/contract.md section 14): a retyped
// field's count says where it was seen, and its list records are the
// drift's records (the gets, which the drift does not count, are told
// apart); a renamed cursor is named, with what the edge would then serve.
func TestPMSCheckReportAgreesAndNamesRenamedPaging(t *testing.T) {
	_, env := serveSim(t, pmsim.Config{Seed: 7, Drift: pmsim.Drift{Retype: []string{"last_modified_ms"}}})
	r := jsonReport(t, runCheck(t, env, "--json"))
	var drift, list, gets int
	for _, d := range r.Drift {
		if d.Field == "last_modified_ms" && d.Change == "retyped" {
			drift = d.Records
		}
	}
	for _, v := range r.Violations {
		if v.Field == "last_modified_ms" && v.Rule == pmscheck.RuleShape {
			list, gets = v.Seen.ListRecords, v.Seen.Gets
			if v.Count != list+gets {
				t.Errorf("count %d, seen %+v: they differ", v.Count, v.Seen)
			}
		}
	}
	if drift == 0 || list != drift || gets == 0 {
		t.Fatalf("retyped in %d records by the drift, %d list records and %d gets by the violation: want the same records, gets apart", drift, list, gets)
	}
	human := runCheck(t, env).stdout
	want := []string{fmt.Sprintf("(in %d list records, %d gets)", list, gets), fmt.Sprintf("is string in %d records", drift)}
	for _, w := range want {
		if !strings.Contains(human, w) {
			t.Errorf("human report lacks %q:\n%s", w, human)
		}
	}
	if strings.Contains(human, "time(s)") {
		t.Errorf("human report counts in times, not records:\n%s", human)
	}

	_, env = serveSim(t, pmsim.Config{Seed: 7, Drift: pmsim.Drift{Paging: pmsim.PagingRenameCursor}})
	human = runCheck(t, env).stdout
	for _, w := range []string{"no nextCursor, but `next_cursor` instead: renamed?", "serve page 1 of the list only"} {
		if !strings.Contains(human, w) {
			t.Errorf("renamed cursor: human report lacks %q:\n%s", w, human)
		}
	}
	if strings.Contains(human, "missing required field") {
		t.Errorf("renamed cursor reported twice:\n%s", human)
	}
}

// TestPMSCheckBaselineLists3Removed: with --baseline from a healthy run,
// a run where 3 properties disappeared lists exactly those 3 and exits 1
// (docs/contract.md section 14).
func TestPMSCheckBaselineLists3Removed(t *testing.T) {
	healthy, env := serveSim(t, pmsim.Config{Seed: 7})
	file := filepath.Join(t.TempDir(), "baseline.json")
	if c := runCheck(t, env, "--save", file); c.exitCode() != 0 {
		t.Fatalf("healthy run: exit %d (%v)", c.exitCode(), c.err)
	}
	dropped, env := serveSim(t, pmsim.Config{Seed: 7, Drift: pmsim.Drift{Drop: 3}})
	before, _ := mappedIDs(healthy)
	after, _ := mappedIDs(dropped)
	var gone []string
	for id := range before {
		if !after[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	if len(gone) != 3 {
		t.Fatalf("the simulator dropped %d mappable records, want 3", len(gone))
	}

	c := runCheck(t, env, "--json", "--baseline", file)
	if c.exitCode() != 1 {
		t.Fatalf("exit %d (%v), want 1", c.exitCode(), c.err)
	}
	d := jsonReport(t, c).Baseline
	if d == nil || !slices.Equal(d.Removed, gone) || len(d.Added)+len(d.Changed)+len(d.Rejected) != 0 {
		t.Fatalf("baseline diff %+v, want removed exactly %v", d, gone)
	}
	human := runCheck(t, env, "--baseline", file)
	if !strings.Contains(human.stdout, "REMOVED: "+strings.Join(gone, ", ")) {
		t.Errorf("human report does not list the 3:\n%s", human.stdout)
	}

	// The same run against itself: no difference, exit 0.
	if c := runCheck(t, map[string]string{"PMS_BASE_URL": env["PMS_BASE_URL"], "EDGE_BRAND": "aurora"}, "--save", file); c.exitCode() != 0 {
		t.Fatal(c.err)
	}
	if c := runCheck(t, env, "--json", "--baseline", file); c.exitCode() != 0 || !jsonReport(t, c).Baseline.Empty() {
		t.Errorf("a run against its own baseline: exit %d, %s", c.exitCode(), c.stdout)
	}
}

// TestPMSCheckDataChangesExitZero: a property renamed and one added are
// data changes: listed by public field, exit 0. A property whose record
// now fails the mapping exits 1.
func TestPMSCheckDataChangesExitZero(t *testing.T) {
	sim, env := serveSim(t, pmsim.Config{Seed: 7})
	file := filepath.Join(t.TempDir(), "baseline.json")
	if c := runCheck(t, env, "--save", file); c.exitCode() != 0 {
		t.Fatal(c.err)
	}
	recs := sim.Records("aurora")
	var first map[string]any
	var idx int
	for i, raw := range recs {
		if _, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora"}); err == nil {
			idx = i
			_ = json.Unmarshal(raw, &first)
			break
		}
	}
	first["display_name"] = "Renamed Hotel"
	renamed, _ := json.Marshal(first)
	recs[idx] = renamed
	recs = append(recs, json.RawMessage(`{"hotel_id":"11111111-2222-4333-8444-555555555555","brand_code":"aurora",`+
		`"display_name":"New","lifecycle":"LIVE","time_zone":"UTC","created_at":"2024-01-01T00:00:00Z"}`))
	sim.SetRecords("aurora", recs)
	c := runCheck(t, env, "--json", "--baseline", file)
	if c.exitCode() != 0 {
		t.Fatalf("exit %d (%v), want 0\n%s", c.exitCode(), c.err, c.stdout)
	}
	d := jsonReport(t, c).Baseline
	id, _ := mapping.ParseID(first["hotel_id"].(string))
	if !slices.Equal(d.Added, []string{"11111111-2222-4333-8444-555555555555"}) || len(d.Changed) != 1 ||
		d.Changed[0].ID != id || !slices.Equal(d.Changed[0].Fields, []string{"name"}) {
		t.Errorf("diff %+v, want one added and %s changed in name", d, id)
	}

	first["display_name"] = "  "
	blank, _ := json.Marshal(first)
	recs[idx] = blank
	sim.SetRecords("aurora", recs)
	c = runCheck(t, env, "--json", "--baseline", file)
	d = jsonReport(t, c).Baseline
	if c.exitCode() != 1 || len(d.Rejected) != 1 || d.Rejected[0].ID != id || d.Rejected[0].Reason != mapping.ReasonEmptyName {
		t.Errorf("exit %d, diff %+v: want 1 with %s now rejected (empty_name)", c.exitCode(), d, id)
	}
}

// TestPMSCheckUsage: usage errors exit 2; with no PMS_BASE_URL the demo's
// simulator is checked (exit 0).
func TestPMSCheckUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
	}{
		"unknown flag":     {nil, []string{"--nope"}},
		"missing baseline": {nil, []string{"--baseline", filepath.Join(t.TempDir(), "none.json")}},
		"bad url":          {map[string]string{"PMS_BASE_URL": "ftp://x", "EDGE_BRAND": "aurora"}, nil},
		"sandbox unset":    {map[string]string{"PMS_BASE_URL": "http://127.0.0.1:1", "EDGE_BRAND": "aurora"}, []string{"--sandbox"}},
	} {
		if c := runCheck(t, tc.env, tc.args...); c.exitCode() != 2 {
			t.Errorf("%s: exit %d (%v), want 2", name, c.exitCode(), c.err)
		}
	}
	c := runCheck(t, nil)
	if c.exitCode() != 0 || !strings.Contains(c.stderr, "embedded simulator") || !strings.Contains(c.stdout, "Result: OK") {
		t.Errorf("demo check: exit %d (%v)\n%s\n%s", c.exitCode(), c.err, c.stdout, c.stderr)
	}
	// Without EDGE_BRAND the demo's brand is checked, and said so.
	_, env := serveSim(t, pmsim.Config{Seed: 7})
	delete(env, "EDGE_BRAND")
	if c := runCheck(t, env); c.exitCode() != 0 || !strings.Contains(c.stdout, "brand aurora") || !strings.Contains(c.stderr, "EDGE_BRAND unset") {
		t.Errorf("no EDGE_BRAND: exit %d (%v)\n%s\n%s", c.exitCode(), c.err, c.stdout, c.stderr)
	}
}

// TestPMSCheckHonoursWalkBound: the check walks with the edge's own bounds,
// so a walk larger than EDGE_PMS_MAX_WALK_BYTES fails there as it would in
// the edge (exit 1), and the same PMS passes under the default bound.
func TestPMSCheckHonoursWalkBound(t *testing.T) {
	_, env := serveSim(t, pmsim.Config{Seed: 7})
	if c := runCheck(t, env); c.exitCode() != 0 {
		t.Fatalf("default bound: exit %d (%v)\n%s", c.exitCode(), c.err, c.stdout)
	}
	env["EDGE_PMS_MAX_WALK_BYTES"] = "1024"
	c := runCheck(t, env)
	if c.exitCode() != 1 || !strings.Contains(c.stdout+c.stderr, "1024 bytes") {
		t.Errorf("1 KiB bound: exit %d (%v), want 1 naming the bound\n%s\n%s", c.exitCode(), c.err, c.stdout, c.stderr)
	}
}

// edge pms check names a drift's cause with the records affected
// (docs/contract.md section 14): a renamed display_name is missing where a
// field name appeared, in as many records as the brand has; a retyped
// hotel_id is counted record by record (every record walked and rejected),
// not as one undecodable record of an empty id.
func TestPMSCheckNamesTheDrift(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift pmsim.Drift
		want  func(n int) []string
	}{
		{"rename display_name", pmsim.Drift{Rename: map[string]string{"display_name": "name"}}, func(n int) []string {
			return []string{fmt.Sprintf("field `display_name` missing in %d records, a field `name` appeared in %d records", n, n),
				fmt.Sprintf("Records: %d walked", n)}
		}},
		{"retype hotel_id", pmsim.Drift{Retype: []string{"hotel_id"}}, func(n int) []string {
			return []string{fmt.Sprintf("field `hotel_id` is object in %d records, want string", n),
				fmt.Sprintf("Records: %d walked, 0 mapped, %d rejected", n, n), fmt.Sprintf("rejected undecodable (%d)", n)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim, env := serveSim(t, pmsim.Config{Seed: 7, Drift: tc.drift})
			n := len(sim.Records("aurora"))
			c := runCheck(t, env)
			for _, want := range tc.want(n) {
				if !strings.Contains(c.stdout, want) {
					t.Errorf("report lacks %q:\n%s", want, c.stdout)
				}
			}
			r := jsonReport(t, runCheck(t, env, "--json"))
			if len(r.Drift) != 1 || r.Drift[0].Records != n {
				t.Errorf("--json drift %+v, want one of %d records", r.Drift, n)
			}
		})
	}
	_, env := serveSim(t, pmsim.Config{Seed: 7})
	if r := jsonReport(t, runCheck(t, env, "--json")); len(r.Drift) != 0 {
		t.Errorf("a healthy simulator drifts: %+v", r.Drift)
	}
}
