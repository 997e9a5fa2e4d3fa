package openapicheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
// which a schema cannot express (DECISIONS.md sections 4 and 6): the request
// id of the body equals Svc-Request-Id, a problem's instance is the request
// path, and its type is the docs page of its code. The body has already
// matched its schema.
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
	if b.Instance != nil && !instanceMatches(*b.Instance, escapedPath) {
		return fmt.Errorf("problem instance %q differs from the request path %q", *b.Instance, escapedPath)
	}
	if b.Type != nil && b.Code != nil {
		page := "/errors/" + strings.ReplaceAll(strings.ToLower(*b.Code), "_", "-")
		if !strings.HasSuffix(*b.Type, page) {
			return fmt.Errorf("problem type %q does not end in %s, the page of code %s", *b.Type, page, *b.Code)
		}
	}
	return nil
}
