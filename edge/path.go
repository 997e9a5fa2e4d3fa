package edge

import (
	"net/http"
	"net/url"
)

// canonicalPath decodes the percent-encoded unreserved characters of the
// path (RFC 3986 section 6.2.2.2) before chi routes it: /v1/propert%69es is
// /v1/properties (docs/contract.md section 10). Other escapes stay in
// RawPath, which chi routes on: an encoded '/' is never a separator.
func canonicalPath(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http leaves RawPath empty when the sent path is the default
		// encoding of Path, which never encodes an unreserved character.
		if r.URL.RawPath == "" {
			next.ServeHTTP(w, r)
			return
		}
		escaped, changed := decodeUnreserved(r.URL.EscapedPath())
		if !changed {
			next.ServeHTTP(w, r)
			return
		}
		path, err := url.PathUnescape(escaped)
		if err != nil { // unreachable: escaped came from a valid escaped path
			next.ServeHTTP(w, r)
			return
		}
		u := *r.URL
		u.Path, u.RawPath = path, escaped
		if (&url.URL{Path: path}).EscapedPath() == escaped {
			u.RawPath = "" // as url.Parse would leave it
		}
		r2 := *r
		r2.URL = &u
		next.ServeHTTP(w, &r2)
	})
}

// decodeUnreserved decodes every %XX of p that encodes an unreserved
// character, in linear time, and reports whether anything changed. A p with
// a '%' not followed by two hex digits is left as it is (net/http refuses
// such a request before any handler).
func decodeUnreserved(p string) (string, bool) {
	var b []byte
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' {
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return p, false
			}
			if d := unhex(p[i+1])<<4 | unhex(p[i+2]); unreserved(d) {
				if b == nil {
					b = make([]byte, 0, len(p))
					b = append(b, p[:i]...)
				}
				b = append(b, d)
				i += 2
				continue
			}
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if b == nil {
		return p, false
	}
	return string(b), true
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
