package edge

import (
	"net/http"
	"weak"

	"github.com/partner-edge/partner-edge/edge/internal/contentcoding"
)

// compressor compresses the answers of GET /v1/ and /v1/properties[/{id}]
// (docs/contract.md section 18; problems and /v1/health stay plain). A list
// page is the same bytes for every request of a key but its meta, so its
// start is compressed once per snapshot and page (pages) and each request
// appends its meta uncompressed (contentcoding.Static; docs/architecture.md,
// "What we own, and why"). Other bodies are compressed per request (fast).
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
// or when the page cache is full. A pre-joined page is cached by its bounds
// in the snapshot; a filtered page by the key (its grants never change: a
// reload makes new keys), the page's number and size. The cache's owner
// is a weak pointer to the snapshot: a compressed page never keeps a
// replaced snapshot alive (its index, its joined JSON, its items: four
// such owners held four snapshots of a brand in memory after four walks).
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
		owner := weak.Make(p.snap)
		st, full = s.comp.pages.Get(owner, variant, from, to, c)
		if st == nil && !full {
			ip := bufPool.Get().(*[]byte)
			plain := append(appendItems(append((*ip)[:0], pageStart...), p), ']')
			st = s.comp.pages.Add(owner, variant, from, to, c, plain)
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
