package pmsim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Churn plays a PMS whose hotels change while it serves (Config.Churn,
// cmd/pmsim --churn), so that the edge's events feed has something to
// tell (docs/contract.md section 23). Each step makes Config.ChurnChanges
// changes in every brand, their kinds in the order of ChurnKinds: by
// default a rename, a status change and a hotel replaced by a new one.
//
// Every change is made in place: a record's slot keeps its offset, so a
// walk under way never skips or repeats a record because of it. A removal
// empties its slot (lists serve nothing there; pages may hold fewer records
// than their limit), a creation fills a slot emptied by an earlier step, or
// a new one at the end. The kinds come in turn, so a count that is not a
// multiple of 7 makes more of the first ones: 6 removes hotels and creates
// none, and the brand shrinks. With as many creations as removals (a
// multiple of 7), only the first step adds slots; a step that adds slots
// reorders a walk under way with Config.ShuffleEachWalk (its order is
// drawn over the slots). The changed records' last_modified_ms is the step's time. The
// same seed gives the same changes in the same order.
//
// A step costs the records it changes, not the brand's size: it opens only
// the records it picks (record.go) and mends the index slot by slot
// (brandData.set). It reads under the read lock and holds the write lock
// only to put the changed records in, so page reads never wait for a step
// to be worked out.
type churn struct {
	mu     sync.Mutex // one step at a time
	rng    *rand.Rand
	next   atomic.Int64 // UnixNano the next step is due at; 0: not started
	steps  int
	unmaps int // unmappable records made, to alternate the broken field
}

// The kinds of change churn makes, as Change.Kind names them.
const (
	// ChurnRename adds " (Renovated)" to a hotel's name, or takes it away.
	ChurnRename = "rename"
	// ChurnStatus moves a hotel between LIVE and TEMP_CLOSED (from any
	// other lifecycle, to LIVE): active to inactive and back.
	ChurnStatus = "status"
	// ChurnReplace removes a hotel and creates a new one in its slot.
	ChurnReplace = "replace"
	// ChurnUnmap breaks a field the edge's mapping needs (an unknown time
	// zone or a blank name, in turn): the hotel stops mapping.
	ChurnUnmap = "unmap"
	// ChurnRemap mends the oldest record an earlier step broke: the same
	// hotel maps again.
	ChurnRemap = "remap"
	// ChurnRemove removes a hotel, emptying its slot.
	ChurnRemove = "remove"
	// ChurnCreate creates a new hotel, in a slot an earlier step emptied or
	// at the end.
	ChurnCreate = "create"
)

// ChurnKinds are the kinds of change in the order a step makes them,
// Config.ChurnChanges of them, starting again after the last.
var ChurnKinds = []string{ChurnRename, ChurnStatus, ChurnReplace, ChurnUnmap, ChurnRemap, ChurnRemove, ChurnCreate}

// defaultChurnChanges is a step's changes per brand when
// Config.ChurnChanges is 0: the first three kinds.
const defaultChurnChanges = 3

// renovated is the suffix a rename adds or takes away.
const renovated = " (Renovated)"

// maxCatchUp bounds the steps one request makes up for after a quiet time.
const maxCatchUp = 3

// ChurnStep is what one step changed in one brand. Renamed, Retyped,
// Removed and Added are hotel ids of the first rename, status change and
// replacement ("" when there was none); Changes lists every change.
type ChurnStep struct {
	Brand                     string
	Renamed, Retyped, Removed string
	Added                     string
	Changes                   []Change
}

// Change is one change of a churn step.
type Change struct {
	Kind string // one of ChurnKinds
	ID   string // the hotel changed (ChurnReplace: the new hotel)
	Was  string // ChurnReplace: the hotel replaced; else ""
}

// churned is a slot a step emptied.
type churned struct{ slot, step int }

// broken is a record a step made unmappable, with the field it broke and
// the field's value before.
type broken struct {
	slot, step int
	field      string
	was        json.RawMessage
}

// Churn makes one step of changes in every brand now, whatever
// Config.Churn says, and returns them.
func (s *Sim) Churn() []ChurnStep {
	s.churn.mu.Lock()
	defer s.churn.mu.Unlock()
	return s.churnStep(time.Now())
}

// churnDue makes the steps due by now (Config.Churn), at most maxCatchUp.
// A request arriving while another makes a step goes on without waiting.
func (s *Sim) churnDue(now time.Time) {
	if s.cfg.Churn <= 0 {
		return
	}
	if next := s.churn.next.Load(); next != 0 && now.UnixNano() < next {
		return
	}
	if !s.churn.mu.TryLock() { // a step under way: it is this one's too
		return
	}
	defer s.churn.mu.Unlock()
	next, every := s.churn.next.Load(), int64(s.cfg.Churn)
	if next == 0 {
		s.churn.next.Store(now.UnixNano() + every)
		return
	}
	for n := 0; now.UnixNano() >= next && n < maxCatchUp; n++ {
		s.churnStep(now)
		next += every
	}
	if now.UnixNano() >= next { // a long quiet time: start counting again
		next = now.UnixNano() + every
	}
	s.churn.next.Store(next)
}

// churnStep changes every brand once; the caller holds churn.mu.
func (s *Sim) churnStep(now time.Time) []ChurnStep {
	s.churn.steps++
	n := s.cfg.ChurnChanges
	if n <= 0 {
		n = defaultChurnChanges
	}
	var out []ChurnStep
	var counts ChurnStats
	for _, brand := range s.Brands() {
		s.mu.RLock()
		d := s.data[brand]
		var p *plan
		if d != nil && len(d.recs) > 0 {
			p = s.plan(d, brand, n, now)
		}
		s.mu.RUnlock()
		if p == nil {
			continue
		}
		s.mu.Lock()
		applied := s.data[brand] == d // else SetRecords replaced the brand meanwhile
		if applied {
			p.apply(d)
		}
		s.mu.Unlock()
		if applied {
			for _, c := range p.step.Changes {
				counts.add(c.Kind)
			}
			out = append(out, p.step)
		}
	}
	counts.Steps = 1
	s.stats.churned(counts)
	return out
}

// plan is one brand's changes of a step, worked out under the read lock.
type plan struct {
	step     ChurnStep
	edits    []edit
	tookFree int       // emptied slots filled, from the front of free
	appended int       // slots added at the end
	freed    []churned // slots emptied
	mended   int       // broken records mended, from the front of broken
	broke    []broken  // records made unmappable
}

// edit puts rec (nil: nothing) in a slot.
type edit struct {
	slot int
	rec  json.RawMessage
	id   string
}

// apply puts the plan's changes in d; the caller holds the write lock.
func (p *plan) apply(d *brandData) {
	for _, e := range p.edits {
		d.set(e.slot, e.rec, e.id)
	}
	d.free = append(d.free[p.tookFree:], p.freed...)
	d.broken = append(d.broken[p.mended:], p.broke...)
}

// plan works out n changes of brand's data d; the caller holds churn.mu
// and the read lock.
func (s *Sim) plan(d *brandData, brand string, n int, now time.Time) *plan {
	p := &plan{step: ChurnStep{Brand: brand}}
	step, rng := s.churn.steps, s.churn.rng
	used := map[int]bool{}
	title := strings.ToUpper(brand[:1]) + brand[1:]
	stamp := now.UnixMilli()
	put := func(kind string, slot int, r record, id, was string) {
		r.set("last_modified_ms", stamp)
		p.edits = append(p.edits, edit{slot, r.encode(), id})
		p.step.Changes = append(p.step.Changes, Change{Kind: kind, ID: id, Was: was})
	}
	newHotel := func(r *record) string {
		id := uuid(rng)
		r.set("hotel_id", id)
		r.set("display_name", fmt.Sprintf("%s Annex %d", title, step))
		r.set("created_at", now.UTC().Format(time.RFC3339Nano))
		return id
	}
	for k := range n {
		kind := ChurnKinds[k%len(ChurnKinds)]
		if kind == ChurnRemap {
			if p.mended >= len(d.broken) || d.broken[p.mended].step >= step {
				continue // nothing an earlier step broke
			}
			b := d.broken[p.mended]
			p.mended++
			r, err := openRecord(d.recs[b.slot])
			if err != nil {
				continue
			}
			used[b.slot] = true
			r.setRaw(b.field, b.was)
			put(kind, b.slot, r, d.ids[b.slot], "")
			continue
		}
		i, r := pickMappable(rng, d, used)
		if r == nil {
			continue
		}
		id := d.ids[i]
		switch kind {
		case ChurnRename:
			name, _ := r.str("display_name")
			if trimmed, ok := strings.CutSuffix(strings.TrimRight(name, " \t\n"), renovated); ok {
				r.set("display_name", trimmed)
			} else {
				r.set("display_name", strings.TrimSpace(name)+renovated)
			}
			put(kind, i, r, id, "")
		case ChurnStatus:
			if life, _ := r.str("lifecycle"); life == "LIVE" {
				r.set("lifecycle", "TEMP_CLOSED")
			} else {
				r.set("lifecycle", "LIVE")
			}
			put(kind, i, r, id, "")
		case ChurnReplace:
			added := newHotel(&r)
			put(kind, i, r, added, id)
		case ChurnUnmap:
			b := broken{slot: i, step: step, field: "time_zone"}
			if s.churn.unmaps++; s.churn.unmaps%2 == 0 {
				b.field = "display_name"
			}
			b.was = r.raw(b.field)
			if b.field == "time_zone" {
				r.set(b.field, unknownZone)
			} else {
				r.set(b.field, "   ")
			}
			p.broke = append(p.broke, b)
			put(kind, i, r, id, "")
		case ChurnRemove:
			p.edits = append(p.edits, edit{slot: i})
			p.freed = append(p.freed, churned{i, step})
			p.step.Changes = append(p.step.Changes, Change{Kind: kind, ID: id})
		case ChurnCreate: // r is the template, left as it is
			used[i] = false
			slot := len(d.recs) + p.appended
			if p.tookFree < len(d.free) && d.free[p.tookFree].step < step {
				slot = d.free[p.tookFree].slot
				p.tookFree++
			} else {
				p.appended++
			}
			used[slot] = true
			added := newHotel(&r)
			put(kind, slot, r, added, "")
		}
	}
	for _, c := range p.step.Changes {
		switch {
		case c.Kind == ChurnRename && p.step.Renamed == "":
			p.step.Renamed = c.ID
		case c.Kind == ChurnStatus && p.step.Retyped == "":
			p.step.Retyped = c.ID
		case c.Kind == ChurnReplace && p.step.Added == "":
			p.step.Added, p.step.Removed = c.ID, c.Was
		}
	}
	return p
}

// pickMappable picks a slot, not one of used, whose record the edge maps
// (record.mappable: not one of the deliberately broken ones), opened; -1
// and nil when a few tries find none.
func pickMappable(rng *rand.Rand, d *brandData, used map[int]bool) (int, record) {
	for range 64 {
		i := rng.IntN(len(d.recs))
		if used[i] || d.recs[i] == nil {
			continue
		}
		r, err := openRecord(d.recs[i])
		if err != nil || !r.mappable() {
			continue
		}
		used[i] = true
		return i, r
	}
	return -1, nil
}
