package pms

import (
	"context"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// Properties lists every record of the brand and maps it, as Snapshot does,
// but returns the mapped records themselves with the load time: the form a
// snapshot is shared in between edge instances (upstream/fleet). Unmappable
// records are left out and reported to OnReject.
//
// Each record is mapped as its page arrives and only the mapped records are
// kept: they, and the rejections handed to OnReject, count against the
// walk's bound (MaxWalkBytes), and the heap guard keeps the walk's garbage
// from piling up (docs/resilience.md, "Memory of a walk"; docs/contract.md
// section 17).
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
			held += upstream.PropertySize(p)
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

// heapGuard keeps a walk's garbage from piling up on what it keeps (the
// collector lets the heap grow to twice what was live at its last cycle,
// and decoding makes about as much garbage as the walk keeps): every
// guardEvery bytes kept it collects when the heap holds more than at the
// walk's start plus 1.0625 times what the walk keeps plus a sixteenth of
// the bound (docs/resilience.md, "Memory of a walk", for the figures).
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
