package openapicheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ids holds the fields crossCheck compares with the headers and the request.
type ids struct {
	RequestID *string `json:"requestId"`
	Instance  *string `json:"instance"`
	Type      *string `json:"type"`
	Code      *string `json:"code"`
	Meta      *struct {
		RequestID *string `json:"requestId"`
	} `json:"meta"`
}

// crossCheck asserts the rules that tie a body to its headers and request,
// which a schema cannot express (docs/contract.md sections 4 and 6): the request
// id of the body equals Svc-Request-Id, a problem's instance is the request
// path (see instanceNames), and its type is the docs page of its code. The
// body has already matched its schema.
func crossCheck(escapedPath string, header http.Header, body []byte) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	var b ids
	if err := json.Unmarshal(body, &b); err != nil {
		return nil // not an object: the schema has judged it
	}
	reqID := header.Get("Svc-Request-Id")
	switch {
	case b.Meta != nil && b.Meta.RequestID != nil:
		if *b.Meta.RequestID != reqID {
			return fmt.Errorf("meta.requestId %q differs from Svc-Request-Id %q", *b.Meta.RequestID, reqID)
		}
	case b.RequestID != nil:
		if *b.RequestID != reqID {
			return fmt.Errorf("problem requestId %q differs from Svc-Request-Id %q", *b.RequestID, reqID)
		}
	}
	if b.Instance != nil && !instanceNames(*b.Instance, escapedPath) {
		return fmt.Errorf("problem instance %q differs from the request path %q", clip(*b.Instance), clip(escapedPath))
	}
	if b.Type != nil && b.Code != nil {
		page := "/errors/" + strings.ReplaceAll(strings.ToLower(*b.Code), "_", "-")
		if !strings.HasSuffix(*b.Type, page) {
			return fmt.Errorf("problem type %q does not end in %s, the page of code %s", *b.Type, page, *b.Code)
		}
	}
	return nil
}

// minClipped is the least number of characters of the request path that a
// clipped instance keeps (the document's Problem.instance).
const minClipped = 128

// clipMarkers are the endings an edge may put after a clipped instance.
var clipMarkers = []string{"\u2026", "..."}

// instanceNames reports whether a problem's instance names the request
// path. Both are compared once normalised (RFC 3986 section 6.2.2: the edge
// decodes percent-encoded unreserved characters before routing, docs/contract.md
// section 10). A long path may be echoed clipped (docs/contract.md section 10: an answer
// stays a few kilobytes): then the instance is at least minClipped
// characters of the path's beginning, optionally followed by a marker.
func instanceNames(instance, escapedPath string) bool {
	inst, path := normalizePath(instance), normalizePath(escapedPath)
	if inst == path {
		return true
	}
	for _, m := range append([]string{""}, clipMarkers...) {
		kept, ok := strings.CutSuffix(inst, m)
		if ok && len(kept) < len(path) && strings.HasPrefix(path, kept) && utf8.RuneCountInString(kept) >= minClipped {
			return true
		}
	}
	return false
}

// normalizePath decodes the percent-encoded unreserved characters of an
// escaped path and upper-cases the hex digits of the other escapes
// (RFC 3986 sections 6.2.2.1 and 6.2.2.2). A '%' not followed by two hex
// digits is kept as it is.
func normalizePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			b.WriteByte(p[i])
			continue
		}
		c := unhex(p[i+1])<<4 | unhex(p[i+2])
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString(strings.ToUpper(p[i : i+3]))
		}
		i += 2
	}
	return b.String()
}

// isHex and unhex stand again in edge/path.go: this package checks the
// edge from outside and shares none of its code, so that a bug there is
// not copied into the check.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// isUnreserved: ALPHA / DIGIT / "-" / "." / "_" / "~" (RFC 3986 2.3).
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// clip shortens s for an error message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d bytes)", len(s))
}
