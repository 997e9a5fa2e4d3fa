package upstream

import (
	"context"
	"runtime"
	"runtime/metrics"
	"time"
	"unsafe"

	"github.com/partner-edge/partner-edge/mapping"
)

// Properties lists every record of the brand and maps it, as Snapshot does,
// but returns the mapped records themselves with the load time: the form a
// snapshot is shared in between edge instances (upstream/fleet). Unmappable
// records are left out and reported to OnReject.
//
// Each record is mapped as its page arrives and only the mapped records are
// kept (docs/contract.md section 17): they, and the rejections handed to OnReject, count against the
// walk's bound (MaxWalkBytes) as they are kept, so the walk fails
// (BadGateway, ErrWalkOverBound) before it keeps more than its bound,
// whatever the PMS sends. A walk that fails after keeping a large share of
// its bound collects its garbage before it returns: the next walk then
// starts from the process's own footprint instead of stacking on this
// one's (the collector would let the heap grow to twice what was live at
// its last cycle, mid-walk: docs/contract.md section 17).
func (d *Direct) Properties(ctx context.Context) ([]mapping.Property, time.Time, error) {
	bound := d.pms.MaxWalkBytes()
	mo := d.mapOpts()
	var kept propertyChunks
	var held int64
	g := newHeapGuard(bound)
	err := d.pms.WalkHotels(ctx, d.opts.Brand, func(raw []byte) error {
		if d.opts.OnRecord != nil {
			d.opts.OnRecord(raw)
		}
		p, err := mapping.MapRaw(raw, mo)
		if err != nil {
			held += rejectionSize
			d.reject(ctx, err)
		} else {
			held += PropertySize(p)
			kept.add(p)
		}
		if held > bound {
			return OverBound(bound)
		}
		g.check(held)
		return nil
	})
	if err != nil {
		kept = propertyChunks{}
		if held >= releaseAfter {
			runtime.GC()
		}
		return nil, time.Time{}, err
	}
	return kept.all(), d.opts.Now(), nil
}

// heapGuard keeps a walk's garbage from piling up on what it keeps: the
// collector's own pacing lets the heap grow to twice what was live at its
// last cycle (GOGC=100, or cmd/edge's headroom of 48 MiB when that is
// more), and a walk makes about as much garbage as it keeps (decoding
// each record), so a walk near its bound would peak at about twice it.
// Every guardEvery bytes kept, the guard reads the heap and collects when
// it holds more than it did when the walk started plus 1.0625 times what
// the walk keeps plus a sixteenth of the bound: the walk's peak then
// stays under its start plus 1.125 times the bound and its page buffers
// (docs/contract.md section 17), at the cost of about eleven collections for
// a walk to its bound (16 ln 2). A walk of a few MB never collects: its
// slack is larger than its garbage.
type heapGuard struct {
	start, slack, next int64
	sample             []metrics.Sample
}

const guardEvery = 256 << 10

func newHeapGuard(bound int64) *heapGuard {
	g := &heapGuard{slack: bound / 16, next: guardEvery,
		sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	g.start = g.heap()
	return g
}

func (g *heapGuard) heap() int64 {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(g.sample[0].Value.Uint64())
}

func (g *heapGuard) check(held int64) {
	if held < g.next {
		return
	}
	g.next = held + guardEvery
	if g.heap() > g.start+held+held/16+g.slack {
		runtime.GC()
	}
}

// releaseAfter is how much a failed walk must have kept for its garbage
// to be collected at once.
const releaseAfter = 4 << 20

// rejectionSize is what a rejection costs its keeper (OnReject): a
// *mapping.Rejection and its clipped id, about.
const rejectionSize = 128

// PropertySize is what a mapped record costs in memory, about: the struct
// and the strings it points to.
func PropertySize(p mapping.Property) int64 {
	n := int64(unsafe.Sizeof(p)) + int64(len(p.ID)+len(p.Name)+len(p.Status)+len(p.Timezone))
	if p.Code != nil {
		n += int64(unsafe.Sizeof(*p.Code)) + int64(len(*p.Code))
	}
	return n
}

// propertyChunks keeps mapped records in chunks of a fixed size: a walk of
// any length then never copies what it kept to grow a slice (appending to
// one slice would leave several times its size in garbage).
type propertyChunks struct {
	chunks [][]mapping.Property
	n      int
}

const propertyChunk = 1024

func (c *propertyChunks) add(p mapping.Property) {
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == propertyChunk {
		c.chunks = append(c.chunks, make([]mapping.Property, 0, propertyChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, p)
	c.n++
}

// all is every kept record in one slice of its exact size.
func (c *propertyChunks) all() []mapping.Property {
	out := make([]mapping.Property, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

// SnapshotOf builds the Snapshot of mapped records loaded at loadedAt.
func SnapshotOf(props []mapping.Property, loadedAt time.Time) *Snapshot {
	items := make([]*Item, len(props))
	for i, p := range props {
		items[i] = NewItem(p)
	}
	return NewSnapshot(items, loadedAt)
}
