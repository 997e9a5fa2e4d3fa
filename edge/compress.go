package edge

import (
	"net/http"

	"github.com/partner-edge/partner-edge/edge/internal/contentcoding"
)

// compressor compresses the answers of GET /v1/ and /v1/properties[/{id}]
// (docs/contract.md section 18): a body of 1 KiB or more in the coding
// Accept-Encoding prefers (zstd or gzip), identity otherwise. Problems and
// /v1/health stay plain.
//
// A list page is the same bytes for every request of a key (of every key
// that sees every property) but its meta, so its start ({"data":[...]) is
// compressed once per snapshot and page (pages), and each request appends
// only its meta, framed uncompressed (contentcoding.Static): a compressed
// cached list costs about what the plain one does, which copies the whole
// page. Other bodies (a get over 1 KiB, a page once the cache is full) are
// compressed per request at the fastest levels.
type compressor struct {
	fast  *contentcoding.Encoder
	pages *contentcoding.PageCache
}

func newCompressor() *compressor {
	return &compressor{fast: contentcoding.NewEncoder(contentcoding.Fast),
		pages: contentcoding.NewPageCache(contentcoding.NewEncoder(contentcoding.Default), 0)}
}

// writeCoded answers 200 with body, already in coding c (not Identity).
func writeCoded(w http.ResponseWriter, c contentcoding.Coding, body []byte) {
	w.Header()["Content-Encoding"] = c.Header()
	writeJSON(w, http.StatusOK, body)
}

// writePageCoded answers the page p compressed from its cached start, when
// choice compresses a body of its size; false (nothing written) otherwise,
// or when the page cache is full. A pre-joined page is cached by its
// bounds in the snapshot; a page filtered by the key's grants by the key
// (its grants never change: a reload makes new keys) and the page's number
// and size, and its items are joined only to compress it the first time.
func (s responder) writePageCoded(w http.ResponseWriter, r *http.Request, p page, choice contentcoding.Choice) bool {
	if p.joined == nil && len(p.items) == 0 {
		return false // an empty page: small
	}
	bp := bufPool.Get().(*[]byte)
	tail := append(s.appendMeta((*bp)[:0], r, &p), '}')
	variant, from, to, n := any(nil), p.from, p.to, len(p.joined)
	if p.joined == nil {
		variant, from, to = Key(r.Context()), int(p.number), int(p.size)
		n = len(p.items) - 1 // commas
		for _, it := range p.items {
			n += len(it.JSON)
		}
	}
	c := choice.For(len(pageStart) + n + len("]") + len(tail))
	var st *contentcoding.Static
	if c != contentcoding.Identity {
		var full bool
		st, full = s.comp.pages.Get(p.snap, variant, from, to, c)
		if st == nil && !full {
			ip := bufPool.Get().(*[]byte)
			plain := append(appendItems(append((*ip)[:0], pageStart...), p), ']')
			st = s.comp.pages.Add(p.snap, variant, from, to, c, plain)
			putBuf(ip, plain)
		}
	}
	if st == nil {
		putBuf(bp, tail)
		return false
	}
	cp := bufPool.Get().(*[]byte)
	out := st.AppendTo((*cp)[:0], tail)
	w.Header()["Vary"] = contentcoding.VaryHeader
	writeCoded(w, c, out)
	putBuf(cp, out)
	putBuf(bp, tail)
	return true
}
