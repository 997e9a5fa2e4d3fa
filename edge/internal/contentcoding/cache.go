package contentcoding

import (
	"slices"
	"sync"
)

// The page cache's default bounds: the compressed starts of at most
// CacheOwners owners (for the edge, weak pointers to snapshots: the live
// and sandbox ones in use and the ones they replace), at most DefaultCacheBytes in all, each
// entry counted with entryCost of bookkeeping. A brand of 50,000 properties
// at 50 a page is about 3 MB per coding.
const (
	CacheOwners       = 4
	DefaultCacheBytes = 32 << 20
	entryCost         = 128
)

// pageKey names a page of an owner in one coding.
type pageKey struct {
	variant  any
	from, to int
	coding   Coding
}

// ownerPages are the compressed starts of one owner.
type ownerPages struct {
	owner any
	pages map[pageKey]*Static
	used  uint64 // the cache's clock at the last lookup: the stalest goes first
	full  bool   // a page of it did not fit: its other misses get nil
}

// PageCache holds compressed starts of pages (Static), each compressed
// once. An owner is what the pages are slices of (the edge's snapshot),
// compared by ==: a new owner's pages are compressed anew, and the
// stalest owner's are dropped once CacheOwners are held. The cache keeps
// its owners alive: an owner that must not be (the edge's snapshots) is
// given as a weak pointer. Past MaxBytes, Get answers nil
// for more pages of an owner it holds: the caller compresses per request.
// Safe for concurrent use.
type PageCache struct {
	enc      *Encoder
	maxBytes int
	mu       sync.Mutex
	owners   []*ownerPages
	bytes    int
	clock    uint64
}

// NewPageCache returns a cache compressing with enc, holding at most
// maxBytes (DefaultCacheBytes when zero or less).
func NewPageCache(enc *Encoder, maxBytes int) *PageCache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &PageCache{enc: enc, maxBytes: maxBytes}
}

// Get returns the compressed start of the page [from, to) of owner and
// variant (nil, or what else the page's bytes depend on, compared by ==:
// the edge's key, for a page filtered by its grants) in coding c, or nil
// and whether the cache is full for owner (then the caller compresses per
// request rather than Add).
func (pc *PageCache) Get(owner, variant any, from, to int, c Coding) (st *Static, full bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	op := pc.find(owner)
	if op == nil {
		return nil, false
	}
	return op.pages[pageKey{variant, from, to, c}], op.full
}

// Add compresses plain, the page's start, caches it when it fits, and
// returns it. The compression runs outside the lock: two first requests
// for the same page both compress it, and the first to finish is kept.
func (pc *PageCache) Add(owner, variant any, from, to int, c Coding, plain []byte) *Static {
	k := pageKey{variant, from, to, c}
	st := pc.enc.Static(c, plain)

	pc.mu.Lock()
	defer pc.mu.Unlock()
	op := pc.find(owner)
	if op == nil {
		if len(pc.owners) == CacheOwners || slices.ContainsFunc(pc.owners, func(op *ownerPages) bool { return op.full }) {
			pc.dropStalest() // a new owner: the stalest is likely replaced
		}
		op = &ownerPages{owner: owner, pages: map[pageKey]*Static{}, used: pc.clock}
		pc.owners = append(pc.owners, op)
	}
	if old := op.pages[k]; old != nil {
		return old
	}
	if cost := st.Size() + entryCost; pc.bytes+cost <= pc.maxBytes {
		op.pages[k] = &st
		pc.bytes += cost
	} else {
		op.full = true
	}
	return &st
}

// find returns owner's pages and marks them used; mu held.
func (pc *PageCache) find(owner any) *ownerPages {
	pc.clock++
	for _, op := range pc.owners {
		if op.owner == owner {
			op.used = pc.clock
			return op
		}
	}
	return nil
}

// dropStalest forgets the pages of the owner used longest ago; mu held.
func (pc *PageCache) dropStalest() {
	i := 0
	for j, op := range pc.owners {
		if op.used < pc.owners[i].used {
			i = j
		}
	}
	for _, st := range pc.owners[i].pages {
		pc.bytes -= st.Size() + entryCost
	}
	for _, op := range pc.owners {
		op.full = false // room again
	}
	pc.owners = slices.Delete(pc.owners, i, i+1)
}
