// Package upstream is the edge's vocabulary of the PMS side, which every
// other package imports: the Catalog the handlers consume and the Snapshot
// and Item it serves; the one error type (Error, its Kind) and Classify, the
// one classifier, which defaults to Internal; the causes and refusals
// failures carry (Cause, RefusalOf, Paused), never a byte the PMS sent; the
// outcomes, breaker states, span names and instruments of PMS calls
// (PMSMetrics); a walk's counters (WalkStats) and the caller ids a request
// carries. It holds no client: the PMS over HTTP is upstream/pms, Redis is
// upstream/redisconn, the read model upstream/cache, a fleet's shared walk
// upstream/fleet.
//
// Layers wrap one another behind Catalog, so handlers never change when a
// layer is added.
package upstream

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"slices"
	"time"
	"unsafe"

	"github.com/partner-edge/partner-edge/mapping"
)

// Catalog serves the public properties of the deployment's brand from one
// PMS (live or sandbox).
//
// Errors are *Error: NotFound from Property; BadGateway, Unavailable or
// Timeout when the PMS fails; Canceled when the caller left; Internal for a
// fault of the edge (a recovered panic included).
type Catalog interface {
	// Snapshot returns every mappable property of the brand. The result is
	// shared and must not be modified.
	Snapshot(ctx context.Context) (*Snapshot, error)
	// Property returns one property, active or not, by lower-case id.
	Property(ctx context.Context, id string) (*Item, error)
}

// Awaiter is a Catalog whose snapshot is walked on the clock, not on
// request (upstream/cache: Cache.Schedule). Await returns once a walk has
// made a snapshot, never starting one itself; until then it waits a
// little and answers an *Error (Unavailable with a Retry-After while the
// first walk runs, or that walk's failure). The events feed asks it
// instead of Snapshot: reading the feed never reaches the PMS
// (docs/contract.md section 24).
type Awaiter interface {
	Await(ctx context.Context) error
}

// Item is one mapped property, encoded once when loaded, ready to write.
type Item struct {
	ID        string
	Active    bool
	CreatedAt time.Time
	// JSON is the property's public JSON object. Shared: never modify it.
	JSON []byte
}

// NewItem encodes p, appending (mapping.Property.AppendJSON: no
// reflection, no second pass to compact what json.Marshal would have
// produced).
func NewItem(p mapping.Property) *Item {
	return &Item{ID: p.ID, Active: p.Active(), CreatedAt: p.CreatedAt, JSON: p.AppendJSON(make([]byte, 0, 256))}
}

// Snapshot is every mappable property of the brand at one moment.
type Snapshot struct {
	// Active are the listed properties, ordered by CreatedAt, then ID.
	Active []*Item
	// LoadedAt is when the PMS answered.
	LoadedAt time.Time
	byID     map[string]*Item
	loaded   []*Item // byID's items in the order given to NewSnapshot
	// joined is the JSON of Active, comma-separated, and ends[k] the end of
	// item k in it: a page of a key that sees every property is one slice.
	joined []byte
	ends   []int
}

// NewSnapshot indexes items and orders the active ones. A duplicate id keeps
// the first item.
func NewSnapshot(items []*Item, loadedAt time.Time) *Snapshot {
	s := &Snapshot{LoadedAt: loadedAt, byID: make(map[string]*Item, len(items)), loaded: make([]*Item, 0, len(items))}
	for _, it := range items {
		if _, dup := s.byID[it.ID]; dup {
			continue
		}
		s.byID[it.ID] = it
		s.loaded = append(s.loaded, it)
		if it.Active {
			s.Active = append(s.Active, it)
		}
	}
	slices.SortFunc(s.Active, func(a, b *Item) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	s.ends = make([]int, len(s.Active))
	for k, it := range s.Active {
		if k > 0 {
			s.joined = append(s.joined, ',')
		}
		s.joined = append(s.joined, it.JSON...)
		s.ends[k] = len(s.joined)
	}
	return s
}

// Held is s as a listing pinned to it reads it once a newer snapshot
// replaced it (docs/contract.md section 25): Active and LoadedAt only,
// without the index or the joined JSON, so that it holds the references
// to its items and nothing more (its items are mostly the newer
// snapshot's too: SnapshotAfter). Get finds nothing in it, Len is 0 and
// ActiveJSON nil (Joined reports false): its pages are written item by
// item.
func (s *Snapshot) Held() *Snapshot {
	return &Snapshot{Active: s.Active, LoadedAt: s.LoadedAt}
}

// Joined reports whether ActiveJSON serves s's pages (not a Held view).
func (s *Snapshot) Joined() bool { return s.ends != nil }

// ActiveJSON returns the JSON of Active[i:j], comma-separated, without
// copying: shared, never modify it. Out-of-range bounds are clamped; nil
// for a Held view.
func (s *Snapshot) ActiveJSON(i, j int) []byte {
	j = min(j, len(s.Active))
	if i < 0 || i >= j || s.ends == nil {
		return nil
	}
	start := 0
	if i > 0 {
		start = s.ends[i-1] + 1 // past the comma
	}
	return s.joined[start:s.ends[j-1]]
}

// ItemBytes is about what it costs in memory: the struct, its id and its
// JSON.
func ItemBytes(it *Item) int64 {
	return int64(unsafe.Sizeof(*it)) + int64(len(it.ID)+cap(it.JSON))
}

// Bytes is about what s costs in memory: its items, its index (about 48
// bytes an entry), its lists of references and its joined JSON.
func (s *Snapshot) Bytes() int64 {
	var n int64
	for _, it := range s.loaded {
		n += ItemBytes(it) + 48 + 8
	}
	return n + int64(len(s.Active))*16 + int64(cap(s.joined))
}

// JoinedRun returns the JSON of items, comma-separated, as one slice of
// s's joined JSON when they are a run of s.Active; nil otherwise (or for a
// Held view). A page of a held snapshot whose properties did not change
// since is such a run of the current snapshot: at the same place (at)
// when nothing before it was created or removed, else found by the list's
// order (a binary search), however far that moved it; copied at once from
// one buffer rather than item by item from wherever each item lives.
func (s *Snapshot) JoinedRun(items []*Item, at int) []byte {
	if len(items) == 0 || s.ends == nil {
		return nil
	}
	k, found := at, at >= 0 && at < len(s.Active) && s.Active[at] == items[0]
	if !found {
		k, found = slices.BinarySearchFunc(s.Active, items[0], func(a, b *Item) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
	}
	if !found || k+len(items) > len(s.Active) || !slices.Equal(s.Active[k:k+len(items)], items) {
		return nil
	}
	return s.ActiveJSON(k, k+len(items))
}

// Get returns the property with the lower-case id, active or not.
func (s *Snapshot) Get(id string) (*Item, bool) {
	it, ok := s.byID[id]
	return it, ok
}

// Loaded returns every mappable property, active or not, in the order
// the PMS listed them (a duplicate id's later items left out): two walks
// of a PMS whose order is stable are compared in one pass, without
// sorting (the events feed's diff). Shared: never modify it.
func (s *Snapshot) Loaded() []*Item { return s.loaded }

// Len is the number of mappable properties, active or not.
func (s *Snapshot) Len() int { return len(s.byID) }

// All returns every mappable property of the snapshot, active or not,
// ordered by id: for comparing two snapshots property by property (edge pms
// check, the shadow candidate). The items are shared: never modify them.
func (s *Snapshot) All() []*Item {
	return slices.SortedFunc(maps.Values(s.byID), func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
}

// ItemsByID encodes every mapped record (NewItem), ordered by id, the
// first of a duplicate id kept: All of their Snapshot without building one
// (no index, no joined JSON).
func ItemsByID(props []mapping.Property) []*Item {
	out := make([]*Item, len(props))
	for i, p := range props {
		out[i] = NewItem(p)
	}
	slices.SortStableFunc(out, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b *Item) bool { return a.ID == b.ID })
}

// PropertySize is what a mapped record costs in memory, about: the struct
// and the strings it points to.
func PropertySize(p mapping.Property) int64 {
	n := int64(unsafe.Sizeof(p)) + int64(len(p.ID)+len(p.Name)+len(p.Status)+len(p.Timezone))
	if p.Code != nil {
		n += int64(unsafe.Sizeof(*p.Code)) + int64(len(*p.Code))
	}
	return n
}

// SnapshotOf builds the Snapshot of mapped records loaded at loadedAt.
func SnapshotOf(props []mapping.Property, loadedAt time.Time) *Snapshot {
	return SnapshotAfter(nil, props, loadedAt)
}

// SnapshotAfter is SnapshotOf sharing with prev, the previous walk's
// snapshot (nil: none), every item that did not change: same id, same
// JSON, same listing. Walks of a brand mostly find what the last one
// found, so consecutive snapshots hold one copy of an unchanged property,
// and a snapshot held for a listing (docs/contract.md section 25) costs
// its references and the versions only it still holds. Each record is
// encoded into one scratch buffer and copied only when it differs.
func SnapshotAfter(prev *Snapshot, props []mapping.Property, loadedAt time.Time) *Snapshot {
	items := make([]*Item, len(props))
	var scratch []byte
	for i, p := range props {
		scratch = p.AppendJSON(scratch[:0])
		if prev != nil {
			if old, ok := prev.byID[p.ID]; ok && old.Active == p.Active() &&
				old.CreatedAt.Equal(p.CreatedAt) && bytes.Equal(old.JSON, scratch) {
				items[i] = old
				continue
			}
		}
		items[i] = &Item{ID: p.ID, Active: p.Active(), CreatedAt: p.CreatedAt, JSON: bytes.Clone(scratch)}
	}
	return NewSnapshot(items, loadedAt)
}

// DefaultWalkTimeout is a walk's budget of its own when none is set
// (EDGE_PMS_WALK_TIMEOUT; docs/contract.md section 24): the PMS client's
// walks and the fleet's lease on one both follow it.
const DefaultWalkTimeout = 10 * time.Minute
