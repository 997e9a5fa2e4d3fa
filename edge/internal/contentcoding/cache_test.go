package contentcoding

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// cachedBytes is the accounting the cache should hold (the test is alone:
// no lock).
func (pc *PageCache) cachedBytes() int {
	n := 0
	for _, op := range pc.owners {
		for _, st := range op.pages {
			n += st.Size() + entryCost
		}
	}
	return n
}

// items is a pre-joined list of n JSON objects, as a snapshot holds it.
func items(n, seed int) []byte {
	var b []byte
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"object":"property","id":"%08d-%04d-4000-8000-000000000000","name":"Hotel %d"}`, i, seed, i)
	}
	return b
}

// start is the edge's lookup of a page's compressed start (edge/compress.go):
// Get, then Add on a miss while the owner is not full.
func start(pc *PageCache, owner, variant any, from, to int, c Coding, head, mid, tail []byte) *Static {
	if st, full := pc.Get(owner, variant, from, to, c); st != nil || full {
		return st
	}
	return pc.Add(owner, variant, from, to, c, slices.Concat(head, mid, tail))
}

// The page cache compresses a page once, keys by owner, holds at most
// CacheOwners owners' pages and at most its byte bound, and past the bound
// answers nil (the caller compresses per request) for more pages of an
// owner it holds, while a new owner takes the stalest one's place.
func TestPageCacheBounds(t *testing.T) {
	pc := NewPageCache(NewEncoder(Default), 4<<10)
	head, tail := []byte(`{"data":[`), []byte("]")
	owner := new(int)
	joined := items(200, 0)
	first := start(pc, owner, nil, 0, 50, Gzip, head, joined, tail)
	if again := start(pc, owner, nil, 0, 50, Gzip, head, joined, tail); again != first {
		t.Error("the same page compressed twice")
	}
	if z := start(pc, owner, nil, 0, 50, Zstd, head, joined, tail); z == first || z.coding != Zstd {
		t.Error("zstd and gzip share an entry")
	}
	want := append(append(append([]byte(nil), head...), joined...), tail...)
	if got := decode(t, Gzip, first.AppendTo(nil, nil)); string(got) != string(want) {
		t.Errorf("the cached start decodes to %d bytes, want %d", len(got), len(want))
	}
	// The same bounds under another variant (another key's filtered page)
	// are another page.
	k1, k2 := new(int), new(int)
	v1 := start(pc, owner, k1, 0, 50, Gzip, head, items(3, 1), tail)
	v2 := start(pc, owner, k2, 0, 50, Gzip, head, items(3, 2), tail)
	if v1 == v2 || v1 == first || start(pc, owner, k1, 0, 50, Gzip, head, items(3, 1), tail) != v1 {
		t.Error("variants share or lose their entries")
	}
	if got := decode(t, Gzip, v2.AppendTo(nil, nil)); !bytes.Contains(got, items(3, 2)) {
		t.Errorf("variant 2 decodes to %.80s", got)
	}

	sawNil := false
	for from := 0; from < 200; from += 5 {
		if start(pc, owner, nil, from, from+5, Gzip, head, items(5, from), tail) == nil {
			sawNil = true
		}
		if n := pc.cachedBytes(); n != pc.bytes || pc.bytes > pc.maxBytes {
			t.Fatalf("accounting: %d bytes counted, %d held, bound %d", pc.bytes, n, pc.maxBytes)
		}
	}
	if !sawNil {
		t.Errorf("40 pages fit in %d bytes: the test wants the bound reached", pc.maxBytes)
	}

	// New owners (a snapshot's refreshes) take the place of the stalest.
	for i := range 2 * CacheOwners {
		o := new(int)
		if st := start(pc, o, nil, 0, 50, Gzip, head, items(50, i+1), tail); st == nil {
			t.Fatalf("owner %d: no start though older owners could be dropped", i)
		}
		if len(pc.owners) > CacheOwners {
			t.Fatalf("%d owners held, bound %d", len(pc.owners), CacheOwners)
		}
		if n := pc.cachedBytes(); n != pc.bytes || pc.bytes > pc.maxBytes {
			t.Fatalf("accounting: %d bytes counted, %d held, bound %d", pc.bytes, n, pc.maxBytes)
		}
	}
	for _, op := range pc.owners {
		if op.owner == any(owner) {
			t.Error("the first owner is still held after eight newer ones")
		}
	}
}

// Many requests at once share the encoders and the cache (run with -race):
// every answer still decodes to its own bytes.
func TestConcurrentUse(t *testing.T) {
	fast := NewEncoder(Fast)
	pc := NewPageCache(NewEncoder(Default), 0)
	head, tail := []byte(`{"data":[`), []byte("]")
	owners := []*int{new(int), new(int)}
	joined := items(50, 0)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				c := []Coding{Gzip, Zstd}[(g+i)%2]
				meta := fmt.Appendf(nil, `,"meta":{"requestId":"req_%d_%d"}}`, g, i)
				st := start(pc, owners[i%2], nil, 0, 50, c, head, joined, tail)
				want := append(append(append(append([]byte(nil), head...), joined...), tail...), meta...)
				if got, err := decodeErr(c, st.AppendTo(nil, meta)); err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Sprintf("%v cached page: %v, %d bytes, want %d", c, err, len(got), len(want))
					return
				}
				if got, err := decodeErr(c, fast.Append(nil, c, want)); err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Sprintf("%v per request: %v, %d bytes, want %d", c, err, len(got), len(want))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
