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

// Cache lifetimes: pages change only with a release of the edge
// (docs/docsite.md, "Headers of the pages").
const (
	cachePage = "public, max-age=86400"
	cacheMiss = "public, max-age=300"
)

// Handler serves the site. It expects paths relative to the site's root
// (mount it with http.StripPrefix): "" and "/" are the home page, and a
// page is found by its address with or without ".html" or a trailing slash,
// so a problem's type URI opens directly, without a redirect. Its headers,
// caching and compression: docs/docsite.md, "Headers of the pages". A Range
// request gets ranges of the plain body, as ServeContent computes them.
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
			http.Error(w, "405 method not allowed: the documentation is read with GET", http.StatusMethodNotAllowed)
			return
		}
		f := s.lookup(r.URL.Path)
		if f == nil {
			h.Set("Content-Type", notFound.contentType)
			h.Set("Content-Security-Policy", notFound.csp)
			h.Set("Cache-Control", cacheMiss)
			h.Set("Content-Length", strconv.Itoa(len(notFound.body)))
			w.WriteHeader(http.StatusNotFound)
			if r.Method != http.MethodHead {
				_, _ = w.Write(notFound.body)
			}
			return
		}
		h.Set("Content-Type", f.contentType)
		h.Set("Content-Security-Policy", f.csp)
		h.Set("Cache-Control", cachePage)
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
	return s.files[strings.TrimSuffix(p, ".html")+".html"] // nil when there is none
}
