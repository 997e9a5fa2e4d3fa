package pmsim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// GET /_pmsim/stats counts what the Sim served: requests by route, pages
// and their records, churn steps and changes by kind (as the steps report
// them). It answers without the token, past faults, and counts nowhere.
func TestStatsRoute(t *testing.T) {
	s, srv := serve(t, Config{Seed: 4, Brands: 2, HotelsPerBrand: 30, Token: "tok", ChurnChanges: 9})
	auth := []string{"Authorization", "Bearer tok"}
	records := 0
	for _, limit := range []int{10, 25} {
		_, _, body := call(t, srv, listPath("aurora", limit, ""), auth...)
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		records += len(p.Hotels)
	}
	call(t, srv, "/internal/v2/brands/aurora/hotels/"+hotelID(t, s.Records("aurora")[0]), auth...)
	call(t, srv, listPath("aurora", 5, "")) // no token: 401, no page
	call(t, srv, "/elsewhere", auth...)
	want := map[string]int64{}
	var steps int64
	for range 3 {
		steps++
		for _, st := range s.Churn() {
			for _, c := range st.Changes {
				want[c.Kind]++
				want["changes"]++
			}
		}
	}
	s.SetFaults(Faults{ErrorStatus: 503})
	status, hdr, body := call(t, srv, "/_pmsim/stats")
	if status != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("stats: %d %s", status, body)
	}
	var got struct {
		Requests, Lists, Gets, Other, Faulted, Unauthorized, Pages, PageRecords int64
		ByRoute                                                                 map[string]int64
		Churn                                                                   map[string]int64
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Requests != 5 || got.Lists != 3 || got.Gets != 1 || got.Other != 1 || got.Unauthorized != 1 ||
		got.Pages != 2 || got.PageRecords != int64(records) || records != 35 {
		t.Errorf("counters %+v; want 5 requests, 3 lists, 1 get, 1 other, 1 unauthorized, 2 pages of 35 records", got)
	}
	if got.ByRoute[RouteList] != 3 || got.ByRoute[RouteGet] != 1 || got.ByRoute["other"] != 1 {
		t.Errorf("byRoute %v", got.ByRoute)
	}
	if got.Churn["steps"] != steps || got.Churn["changes"] != want["changes"] || want["changes"] == 0 {
		t.Errorf("churn %v; want %d steps, %d changes", got.Churn, steps, want["changes"])
	}
	for _, k := range ChurnKinds {
		if got.Churn[k] != want[k] || want[k] == 0 {
			t.Errorf("churn %s: %d counted, %d made", k, got.Churn[k], want[k])
		}
	}
	if st := s.Stats(); st.Requests != 5 || st.Churn.Steps != steps {
		t.Errorf("reading the stats counted: %+v", st)
	}
	for _, tc := range []struct {
		method, path string
		status       int
	}{{http.MethodPost, "/_pmsim/stats", 405}, {http.MethodGet, "/_pmsim/nope", 404}} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(""))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
	}
	s.ResetStats()
	if st := s.Stats(); st != (Stats{}) {
		t.Errorf("after ResetStats: %+v", st)
	}
}
