package openapitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
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
// digits is kept as it is. It shares no code with edge/path.go, which it
// checks, so that a bug there is not copied here.
func normalizePath(p string) string {
	return escape.ReplaceAllStringFunc(p, func(e string) string {
		c, _ := strconv.ParseUint(e[1:], 16, 8)
		if s := string(rune(c)); unreserved.MatchString(s) {
			return s
		}
		return strings.ToUpper(e)
	})
}

var (
	escape     = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)
	unreserved = regexp.MustCompile(`^[A-Za-z0-9._~-]$`) // RFC 3986 section 2.3
)

// clip shortens s for an error message.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("... (%d bytes)", len(s))
}
