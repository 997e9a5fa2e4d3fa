package openapicheck

import "strings"

// normalisePath decodes the percent-encoded unreserved characters of an
// escaped path (RFC 3986 section 6.2.2.2), as the edge does before routing
// (DECISIONS.md section 10): /v1/propert%69es is /v1/properties.
func normalisePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if c, ok := unhexByte(p[i+1], p[i+2]); ok && unreservedByte(c) {
				b.WriteByte(c)
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func unhexByte(a, b byte) (byte, bool) {
	const digits = "0123456789abcdefABCDEF"
	hi, lo := strings.IndexByte(digits, a), strings.IndexByte(digits, b)
	if hi < 0 || lo < 0 {
		return 0, false
	}
	if hi > 15 {
		hi -= 6
	}
	if lo > 15 {
		lo -= 6
	}
	return byte(hi<<4 | lo), true
}

func unreservedByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// instanceMatches reports whether a problem's instance is the request path,
// or the path clipped by the edge's writer (a prefix ending in "…") when
// the path was too long to echo whole.
func instanceMatches(instance, escapedPath string) bool {
	if instance == escapedPath {
		return true
	}
	prefix, clipped := strings.CutSuffix(instance, "…")
	return clipped && strings.HasPrefix(escapedPath, prefix)
}
