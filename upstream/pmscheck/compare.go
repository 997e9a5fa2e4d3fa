package pmscheck

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// Comparer is Compare fed the current side one record at a time, as a walk
// maps it, keeping only what differs and one bit per base property, so that
// a walk of any size is compared as it runs (docs/resilience.md, "Memory of
// a walk"); Kept says how much, for the walk's bound. Compare is built on it:
// one definition of added, removed, changed and rejected. A Comparer is used
// by one goroutine at a time.
type Comparer struct {
	base  []*upstream.Item // ordered by id, ids unique; shared, never modified
	seen  []uint64         // bit i: the current side maps base[i]
	nseen int
	// rejected holds, by base index, the least (id as sent, reason) of the
	// current side's rejections of that id: the one Compare's walk over
	// Result.Rejected, ordered by id then reason, meets first.
	rejected map[int]Rejected
	// added are the ids the current side maps and base lacks: canonical
	// UUIDs as their 16 bytes (a map without pointers, which the collector
	// does not scan), any other id as itself.
	added      map[uuid.UUID]struct{}
	addedOther map[string]struct{}
	changed    []Change
	kept       int64
	buf        []byte // Mapped's encoding, reused
}

// What the Comparer keeps per entry of the current side, about: the key or
// entry and its share of the map or slice around it.
const (
	keptAddedUUID  = 32
	keptAddedOther = 64 // plus the id
	keptRejection  = 96 // plus the id as sent
	keptChange     = 64 // plus the id and each field's name and header
)

// NewComparer compares the current side, as it is fed, with base: every
// property of the base side, ordered by id, ids unique (upstream.Snapshot.All
// is). The items are read, never modified.
func NewComparer(base []*upstream.Item) *Comparer {
	return &Comparer{base: base, seen: make([]uint64, (len(base)+63)/64), rejected: map[int]Rejected{},
		added: map[uuid.UUID]struct{}{}, addedOther: map[string]struct{}{}}
}

// Mapped records that the current side maps p. Only the first property of
// an id counts. p is encoded (upstream.Item's JSON) only when base has its
// id, into a buffer reused from call to call; of a p that Wants refused,
// only its ID is read.
func (c *Comparer) Mapped(p mapping.Property) {
	if i, ok := c.first(p.ID); ok {
		c.buf = p.AppendJSON(c.buf[:0])
		c.compare(i, c.buf)
	}
}

// Wants reports whether Mapped needs the whole property of id: base has
// it and the current side has not mapped it yet. Of any other id Mapped
// reads the ID alone (mapping.MapRawFor's want).
func (c *Comparer) Wants(id string) bool {
	i, ok := c.find(id)
	return ok && c.seen[i/64]&(1<<(i%64)) == 0
}

// first marks id as mapped by the current side and reports the base index
// to compare it with: ok is false for an id base lacks (added) and for an
// id already seen (only the first counts).
func (c *Comparer) first(id string) (int, bool) {
	i, ok := c.find(id)
	if !ok {
		c.add(id)
		return 0, false
	}
	if c.seen[i/64]&(1<<(i%64)) != 0 {
		return 0, false
	}
	c.seen[i/64] |= 1 << (i % 64)
	c.nseen++
	return i, true
}

func (c *Comparer) find(id string) (int, bool) {
	return slices.BinarySearchFunc(c.base, id, func(it *upstream.Item, id string) int { return strings.Compare(it.ID, id) })
}

func (c *Comparer) add(id string) {
	if u, ok := uuidBytes(id); ok {
		if _, dup := c.added[u]; !dup {
			c.added[u] = struct{}{}
			c.kept += keptAddedUUID
		}
		return
	}
	if _, dup := c.addedOther[id]; !dup {
		c.addedOther[id] = struct{}{}
		c.kept += keptAddedOther + int64(len(id))
	}
}

// compare records the public fields of base[i] that js changes.
func (c *Comparer) compare(i int, js []byte) {
	b := c.base[i]
	if bytes.Equal(b.JSON, js) {
		return
	}
	fields := changedFields(b.JSON, js)
	if len(fields) == 0 {
		return
	}
	c.changed = append(c.changed, Change{ID: b.ID, Fields: fields})
	c.kept += keptChange + int64(len(b.ID))
	for _, f := range fields {
		c.kept += 16 + int64(len(f))
	}
}

// Rejected records that the current side's mapping left out the record
// with this id (as sent) for reason. It matters only for an id of base
// the current side does not map: that property is then Rejected, not
// Removed, with the reason of its least (id, reason).
func (c *Comparer) Rejected(id string, reason mapping.Reason) {
	canon := id
	if p, ok := mapping.ParseID(id); ok {
		canon = p
	}
	i, ok := c.find(canon)
	if !ok {
		return
	}
	old, had := c.rejected[i]
	if had && cmp.Or(cmp.Compare(old.ID, id), cmp.Compare(old.Reason, reason)) <= 0 {
		return
	}
	if !had {
		c.kept += keptRejection + int64(len(id))
	}
	c.rejected[i] = Rejected{ID: id, Reason: reason}
}

// Kept is about how many bytes the Comparer keeps of the current side.
func (c *Comparer) Kept() int64 { return c.kept }

// Properties is the number of distinct properties the current side maps.
func (c *Comparer) Properties() int { return c.nseen + len(c.added) + len(c.addedOther) }

// Diff is what differs, every list ordered by id.
func (c *Comparer) Diff() *Diff {
	d := &Diff{Added: make([]string, 0, len(c.added)+len(c.addedOther)), Removed: []string{},
		Changed: append([]Change{}, c.changed...), Rejected: []Rejected{}}
	slices.SortFunc(d.Changed, func(a, b Change) int { return cmp.Compare(a.ID, b.ID) })
	for i, it := range c.base {
		if c.seen[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		if r, ok := c.rejected[i]; ok {
			d.Rejected = append(d.Rejected, Rejected{ID: it.ID, Reason: r.Reason})
		} else {
			d.Removed = append(d.Removed, it.ID)
		}
	}
	for u := range c.added {
		d.Added = append(d.Added, u.String())
	}
	d.Added = slices.AppendSeq(d.Added, maps.Keys(c.addedOther))
	slices.Sort(d.Added)
	return d
}

// uuidBytes is the 16 bytes of a canonical id (mapping.ParseID's form:
// lower-case 8-4-4-4-12 hex, which uuid.UUID.String gives back); ok is
// false for any other string.
func uuidBytes(id string) (uuid.UUID, bool) {
	if canon, valid := mapping.ParseID(id); !valid || canon != id {
		return uuid.UUID{}, false
	}
	u, err := uuid.Parse(id)
	return u, err == nil
}
