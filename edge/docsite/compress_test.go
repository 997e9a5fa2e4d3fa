package docsite

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 18: documentation pages come compressed with gzip and
// zstd (Accept-Encoding's preference) and decode to the plain page; the
// coded answer has its own ETag (304 on it), its Content-Length, and
// Vary: Accept-Encoding; HEAD answers the same headers; a Range request,
// a body under 1 KiB and a client without Accept-Encoding get plain bytes.
func TestHandlerCompressed(t *testing.T) {
	h := build(t, Options{BasePath: "/docs"}).Handler()
	get := func(method, p string, hdr ...string) *httptest.ResponseRecorder { return record(h, method, p, hdr...) }
	for _, p := range []string{"/reference", "/errors/route-not-found", "/", "/assets/site.css"} {
		plain := get(http.MethodGet, p)
		if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" || plain.Body.Len() < 1024 {
			t.Fatalf("GET %s plain: %d, Content-Encoding %q, %d bytes", p, plain.Code, plain.Header().Get("Content-Encoding"), plain.Body.Len())
		}
		if plain.Header().Get("Vary") != "Accept-Encoding" {
			t.Errorf("GET %s plain: Vary %q", p, plain.Header().Get("Vary"))
		}
		for _, ae := range []struct{ send, coding string }{
			{"gzip", "gzip"}, {"zstd", "zstd"}, {"gzip, deflate, br, zstd", "zstd"}, {"zstd;q=0.1, gzip;q=0.9", "gzip"},
		} {
			rec := get(http.MethodGet, p, "Accept-Encoding", ae.send)
			hd := rec.Header()
			if rec.Code != http.StatusOK || hd.Get("Content-Encoding") != ae.coding {
				t.Errorf("GET %s %q: %d, Content-Encoding %q, want %s", p, ae.send, rec.Code, hd.Get("Content-Encoding"), ae.coding)
				continue
			}
			if got := testkit.DecodeBody(t, ae.coding, rec.Body.Bytes()); !bytes.Equal(got, plain.Body.Bytes()) {
				t.Errorf("GET %s %s: decodes to %d bytes, want the %d of the plain page", p, ae.coding, len(got), plain.Body.Len())
			}
			if hd.Get("Content-Length") != strconv.Itoa(rec.Body.Len()) || rec.Body.Len() >= plain.Body.Len() {
				t.Errorf("GET %s %s: Content-Length %q, %d bytes from %d", p, ae.coding, hd.Get("Content-Length"), rec.Body.Len(), plain.Body.Len())
			}
			if hd.Get("Vary") != "Accept-Encoding" || hd.Get("ETag") == plain.Header().Get("ETag") || hd.Get("ETag") == "" {
				t.Errorf("GET %s %s: Vary %q, ETag %q (plain %q)", p, ae.coding, hd.Get("Vary"), hd.Get("ETag"), plain.Header().Get("ETag"))
			}
			if rec2 := get(http.MethodGet, p, "Accept-Encoding", ae.send, "If-None-Match", hd.Get("ETag")); rec2.Code != http.StatusNotModified || rec2.Body.Len() != 0 {
				t.Errorf("GET %s %s with its ETag: %d, want 304", p, ae.coding, rec2.Code)
			}
			if head := get(http.MethodHead, p, "Accept-Encoding", ae.send); head.Code != http.StatusOK || head.Body.Len() != 0 ||
				head.Header().Get("Content-Length") != hd.Get("Content-Length") || head.Header().Get("Content-Encoding") != ae.coding {
				t.Errorf("HEAD %s %s: %d, headers %v", p, ae.coding, head.Code, head.Header())
			}
		}
		if rec := get(http.MethodGet, p, "Accept-Encoding", "gzip", "Range", "bytes=0-99"); rec.Code != http.StatusPartialContent ||
			rec.Header().Get("Content-Encoding") != "" || !bytes.Equal(rec.Body.Bytes(), plain.Body.Bytes()[:100]) {
			t.Errorf("GET %s Range with gzip: %d, Content-Encoding %q", p, rec.Code, rec.Header().Get("Content-Encoding"))
		}
		if rec := get(http.MethodGet, p, "Accept-Encoding", "br, gzip;q=0"); rec.Header().Get("Content-Encoding") != "" ||
			!bytes.Equal(rec.Body.Bytes(), plain.Body.Bytes()) {
			t.Errorf("GET %s with nothing acceptable: Content-Encoding %q", p, rec.Header().Get("Content-Encoding"))
		}
	}
	icon := get(http.MethodGet, "/assets/favicon.svg", "Accept-Encoding", "gzip")
	if icon.Code != http.StatusOK || icon.Body.Len() >= 1024 || icon.Header().Get("Content-Encoding") != "" {
		t.Errorf("favicon (%d bytes) with gzip: %d, Content-Encoding %q; want plain under 1 KiB", icon.Body.Len(), icon.Code, icon.Header().Get("Content-Encoding"))
	}
}
