package shadow

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmscheck"
)

// ErrorOverBound is Comparison.Error of a candidate walk that passed its
// bound (docs/contract.md section 17).
const ErrorOverBound = "walk_over_bound"

// MaxExamples bounds the examples of one Comparison.
const MaxExamples = 20

// Kinds of difference, as metric labels and in Example.Kind.
const (
	KindAdded    = "added"    // the candidate has a property partners do not see now
	KindRemoved  = "removed"  // a property partners see is not in the candidate
	KindChanged  = "changed"  // public fields differ
	KindRejected = "rejected" // the candidate's record of a property partners see fails the mapping
)

// Kinds lists every kind.
var Kinds = []string{KindAdded, KindRemoved, KindChanged, KindRejected}

// Comparison is one candidate walk compared with the live snapshot that
// preceded it. It holds ids, public field names, reason codes and counts
// only: never a value of a record.
type Comparison struct {
	Brand string `json:"brand"`
	Mode  string `json:"mode"`
	// At is when the candidate walk ended; LiveLoadedAt when the live
	// snapshot compared with it was loaded.
	At           time.Time `json:"at"`
	LiveLoadedAt time.Time `json:"liveLoadedAt"`
	// Walks is the number of candidate walks of this mode so far.
	Walks int `json:"walks"`
	// Candidate is "ok", or "failed" with Error the failure's kind
	// (timeout, unavailable, bad_gateway...), or ErrorOverBound when the
	// candidate sent, or its walk would have kept, more than MaxWalkBytes,
	// and Cause its class (upstream.Cause: connection_refused,
	// malformed_header, status_500, bad_json...), never what the candidate
	// sent (docs/contract.md section 22).
	Candidate string `json:"candidate"`
	Error     string `json:"error,omitempty"`
	Cause     string `json:"cause,omitempty"`
	// MaxWalkBytes is the candidate walk's bound
	// (PMS_CANDIDATE_MAX_WALK_BYTES).
	MaxWalkBytes int64     `json:"maxWalkBytes"`
	Counts       Counts    `json:"counts"`
	Examples     []Example `json:"examples"`
	// Drift names what changed in the candidate's records (a field
	// missing and what appeared instead, a field of another JSON type),
	// with the records affected: the cause behind rejected and removed
	// properties. Field names and counts only.
	Drift []pmscheck.Drift `json:"drift"`
}

// Counts are the differences by kind, and the properties on each side.
type Counts struct {
	Added               int `json:"added"`
	Removed             int `json:"removed"`
	Changed             int `json:"changed"`
	Rejected            int `json:"rejected"`
	Live                int `json:"liveProperties"`
	CandidateProperties int `json:"candidateProperties"`
}

// Example is one difference: the property id, and the public field names
// (changed) or the rejection reason (rejected).
type Example struct {
	Kind   string         `json:"kind"`
	ID     string         `json:"id"`
	Fields []string       `json:"fields,omitempty"`
	Reason mapping.Reason `json:"reason,omitempty"`
}

// examples takes at most MaxExamples differences, a fair share of each
// kind first (removed and rejected lead: they are what partners lose).
func examples(d *pmscheck.Diff) []Example {
	var by [4][]Example
	for _, id := range d.Removed {
		by[0] = append(by[0], Example{Kind: KindRemoved, ID: id})
	}
	for _, r := range d.Rejected {
		by[1] = append(by[1], Example{Kind: KindRejected, ID: r.ID, Reason: r.Reason})
	}
	for _, c := range d.Changed {
		by[2] = append(by[2], Example{Kind: KindChanged, ID: c.ID, Fields: slices.Clone(c.Fields)})
	}
	for _, id := range d.Added {
		by[3] = append(by[3], Example{Kind: KindAdded, ID: id})
	}
	out := []Example{}
	longest := max(len(by[0]), len(by[1]), len(by[2]), len(by[3]))
	for i := 0; i < longest && len(out) < MaxExamples; i++ { // round robin over the kinds
		for k := range by {
			if i < len(by[k]) && len(out) < MaxExamples {
				out = append(out, by[k][i])
			}
		}
	}
	return out
}

// State is the answer of GET /shadow.
type State struct {
	// Configured is false when no candidate is set (PMS_CANDIDATE_URL).
	Configured bool `json:"configured"`
	// Comparisons are the latest comparison of each mode, by mode.
	Comparisons []*Comparison `json:"comparisons"`
}

// Handler serves GET /shadow: the latest comparison of each mode. A nil
// Shadow answers {"configured":false,"comparisons":[]}.
func Handler(s *Shadow) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := State{Comparisons: []*Comparison{}}
		if s != nil {
			st.Configured = true
			latest := s.Latest()
			for _, m := range slices.Sorted(maps.Keys(latest)) {
				st.Comparisons = append(st.Comparisons, latest[m])
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(st)
	})
}
