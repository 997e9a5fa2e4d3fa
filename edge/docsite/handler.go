package docsite

import (
	"bytes"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/contentcoding"
)

// Cache lifetimes. Pages and the reference change only with a new release
// of the edge, so a day of caching is harmless and spares the edge; the
// ETag makes revalidation cheap. These pages are outside /v1: the
// contract's Cache-Control: no-store (docs/contract.md section 4) is for API answers,
// which carry per-key data; the documentation is public and the same for
// everyone (docs/contract.md section 13: "cacheable").
const (
	cachePage = "public, max-age=86400"
	cacheMiss = "public, max-age=300"
)

// Handler serves the site. It expects paths relative to the site's root
// (mount it with http.StripPrefix): "" and "/" are the home page, and a
// page is found by its address with or without ".html" or a trailing slash
// (/errors/route-not-found, /errors/route-not-found.html and
// /errors/route-not-found/ are the same page), so a problem's type URI
// opens directly, without a redirect. Only GET and HEAD are answered; an
// unknown path gets a 404 page. Every answer is public and cacheable and
// carries a strict Content-Security-Policy; no answer depends on who asks
// but for its coding: a page of 1 KiB or more is sent compressed (zstd or
// gzip) when Accept-Encoding allows it (docs/contract.md section 18), each
// page compressed once per coding, with Vary: Accept-Encoding and an ETag
// of its own per coding. A Range request gets the plain bytes (ranges of
// the identity body, as ServeContent computes them).
func (s *Site) Handler() http.Handler {
	notFound := s.files["404.html"]
	enc := contentcoding.NewEncoder(contentcoding.Default)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Del("Svc-Correlation-Id") // an echo belongs to API answers, not pages
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			h.Set("Cache-Control", "no-store")
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte("405 method not allowed: the documentation is read with GET\n"))
			return
		}
		f := s.lookup(r.URL.Path)
		status := http.StatusOK
		if f == nil {
			f, status = notFound, http.StatusNotFound
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Content-Security-Policy", f.csp)
		switch {
		case status != http.StatusOK:
			h.Set("Cache-Control", cacheMiss)
			h.Set("Content-Length", strconv.Itoa(len(f.body)))
			w.WriteHeader(status)
			if r.Method != http.MethodHead {
				_, _ = w.Write(f.body)
			}
			return
		case f.immutable:
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		default:
			h.Set("Cache-Control", cachePage)
		}
		h.Set("ETag", f.etag)
		body := f.body
		if compressible(f.contentType) {
			h.Set("Vary", "Accept-Encoding")
			c := contentcoding.Negotiate(r.Header["Accept-Encoding"]).For(len(f.body))
			if c != contentcoding.Identity && r.Header.Get("Range") == "" {
				body = f.codedBody(c, enc)
				h["Content-Encoding"] = c.Header()
				h.Set("ETag", strings.TrimSuffix(f.etag, `"`)+"-"+c.String()+`"`)
				// ServeContent leaves Content-Length unset when
				// Content-Encoding is: without ranges it is body's length.
				h.Set("Content-Length", strconv.Itoa(len(body)))
			}
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

// compressible: text worth compressing (pages, stylesheets, the SVG icon,
// the OpenAPI documents).
func compressible(contentType string) bool {
	return slices.ContainsFunc([]string{"text/", "image/svg+xml", "application/json", "application/yaml"},
		func(p string) bool { return strings.HasPrefix(contentType, p) })
}

// lookup finds the file served at p, a path under the site's root.
func (s *Site) lookup(p string) *file {
	p = strings.Trim(path.Clean("/"+p), "/")
	if p == "" || p == "index" {
		return s.files["index.html"]
	}
	if f, ok := s.files[p]; ok && path.Ext(p) != "" {
		return f
	}
	p = strings.TrimSuffix(p, ".html")
	if f, ok := s.files[p+".html"]; ok {
		return f
	}
	return nil
}
