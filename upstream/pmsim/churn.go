package pmsim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Churn plays a PMS whose hotels change while it serves (Config.Churn,
// cmd/pmsim --churn), so that the edge's events feed has something to
// tell (docs/contract.md section 23): each step, in every brand, one hotel
// is renamed (a suffix added or taken away), one moves between LIVE and
// TEMP_CLOSED (its public status), and one is replaced by a new hotel (a
// removal and a creation). Every change is made in place: a record's slot
// keeps its offset, so a walk under way never skips or repeats a record
// because of it. The changed records' last_modified_ms is the step's time.
// The same seed gives the same changes in the same order.
type churn struct {
	mu    sync.Mutex
	rng   *rand.Rand
	next  time.Time // when the next step is due; zero: churn off
	steps int
}

// renovated is the suffix a rename adds or takes away.
const renovated = " (Renovated)"

// maxCatchUp bounds the steps one request makes up for after a quiet time.
const maxCatchUp = 3

// ChurnStep is what one step changed in one brand: hotel ids.
type ChurnStep struct {
	Brand                     string
	Renamed, Retyped, Removed string
	Added                     string
}

// Churn makes one step of changes in every brand now, whatever
// Config.Churn says, and returns them.
func (s *Sim) Churn() []ChurnStep {
	s.churn.mu.Lock()
	defer s.churn.mu.Unlock()
	return s.churnStep(time.Now())
}

// churnDue makes the steps due by now (Config.Churn), at most maxCatchUp.
func (s *Sim) churnDue(now time.Time) {
	if s.cfg.Churn <= 0 {
		return
	}
	s.churn.mu.Lock()
	defer s.churn.mu.Unlock()
	if s.churn.next.IsZero() {
		s.churn.next = now.Add(s.cfg.Churn)
		return
	}
	for n := 0; !now.Before(s.churn.next) && n < maxCatchUp; n++ {
		s.churnStep(now)
		s.churn.next = s.churn.next.Add(s.cfg.Churn)
	}
	if !now.Before(s.churn.next) { // a long quiet time: start counting again
		s.churn.next = now.Add(s.cfg.Churn)
	}
}

// churnStep changes every brand once; the caller holds churn.mu.
func (s *Sim) churnStep(now time.Time) []ChurnStep {
	s.churn.steps++
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ChurnStep
	for _, brand := range s.brands {
		d := s.data[brand]
		if d == nil || len(d.recs) == 0 {
			continue
		}
		recs := append([]json.RawMessage(nil), d.recs...)
		step := ChurnStep{Brand: brand}
		used := map[int]bool{}
		change := func(f func(rec map[string]any) string) string {
			i, rec := s.pickMappable(recs, used)
			if rec == nil {
				return ""
			}
			id := f(rec)
			rec["last_modified_ms"] = now.UnixMilli()
			recs[i], _ = json.Marshal(rec)
			return id
		}
		step.Renamed = change(func(rec map[string]any) string {
			name := fmt.Sprint(rec["display_name"])
			if trimmed, ok := strings.CutSuffix(strings.TrimRight(name, " \t\n"), renovated); ok {
				rec["display_name"] = trimmed
			} else {
				rec["display_name"] = strings.TrimSpace(name) + renovated
			}
			return fmt.Sprint(rec["hotel_id"])
		})
		step.Retyped = change(func(rec map[string]any) string {
			if rec["lifecycle"] == "LIVE" {
				rec["lifecycle"] = "TEMP_CLOSED"
			} else {
				rec["lifecycle"] = "LIVE"
			}
			return fmt.Sprint(rec["hotel_id"])
		})
		step.Added = change(func(rec map[string]any) string {
			step.Removed = fmt.Sprint(rec["hotel_id"])
			rec["hotel_id"] = uuid(s.churn.rng)
			rec["display_name"] = fmt.Sprintf("%s Annex %d", strings.ToUpper(brand[:1])+brand[1:], s.churn.steps)
			rec["created_at"] = now.UTC().Format(time.RFC3339Nano)
			return fmt.Sprint(rec["hotel_id"])
		})
		s.data[brand] = index(recs)
		out = append(out, step)
	}
	return out
}

// pickMappable picks a record, not one of used, that the edge maps (its
// id a UUID, a name, a known time zone, an RFC 3339 creation time: not
// one of the deliberately broken ones), decoded; -1 and nil when a few
// tries find none.
func (s *Sim) pickMappable(recs []json.RawMessage, used map[int]bool) (int, map[string]any) {
	for range 64 {
		i := s.churn.rng.IntN(len(recs))
		var rec map[string]any
		if used[i] || json.Unmarshal(recs[i], &rec) != nil {
			continue
		}
		id, _ := rec["hotel_id"].(string)
		name, _ := rec["display_name"].(string)
		zone, _ := rec["time_zone"].(string)
		created, _ := rec["created_at"].(string)
		if _, err := time.Parse(time.RFC3339Nano, created); len(id) != 36 || strings.TrimSpace(name) == "" ||
			zone == "" || zone == "Mars/Olympus_Mons" || err != nil {
			continue
		}
		used[i] = true
		return i, rec
	}
	return -1, nil
}
