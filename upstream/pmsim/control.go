package pmsim

import (
	"encoding/json"
	"net/http"
)

// ControlPrefix starts the paths of the simulator's own routes: outside the
// PMS API's (/internal/...), so no brand or hotel can shadow them. They are
// answered before faults, authentication and churn, and counted nowhere:
// reading the counters does not change them.
//
//	GET /_pmsim/stats   the counters (Stats) as JSON, with the requests by route
const ControlPrefix = "/_pmsim/"

// RouteStats is the control route of the counters, as Route returns it.
const RouteStats = ControlPrefix + "stats"

// statsBody is the JSON of GET /_pmsim/stats.
type statsBody struct {
	Stats
	// ByRoute is Lists, Gets and Other again, by route template ("other":
	// no route), for a reader that wants one object to sum.
	ByRoute map[string]int64 `json:"byRoute"`
}

// control answers the simulator's own routes.
func (s *Sim) control(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != RouteStats {
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	}
	st := s.Stats()
	b, err := json.Marshal(statsBody{Stats: st, ByRoute: map[string]int64{
		RouteList: st.Lists, RouteGet: st.Gets, "other": st.Other,
	}})
	if err != nil { // unreachable: numbers only
		writeError(w, http.StatusInternalServerError, "internal")
		return
	}
	writeJSON(w, http.StatusOK, b)
}
