package openapitest

import (
	"os"
	"strings"
	"testing"
)

// TestLoadRejectsWhatItCannotCheck: Load refuses a document it would check
// wrongly rather than pass responses it does not understand.
func TestLoadRejectsWhatItCannotCheck(t *testing.T) {
	orig, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(orig)
	if _, err := load(orig); err != nil {
		t.Fatalf("the document itself: %v", err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"OpenAPI 3.0", "openapi: 3.1.0", "openapi: 3.0.3", "3.1"},
		{"server outside /v1", "url: https://{service}.{brand}.example.com/v1", "url: https://{service}.{brand}.example.com/v2", "does not end in /v1"},
		{"no RouteNotFound component", "    RouteNotFound:\n", "    RouteMissing:\n", "RouteNotFound"},
		{"default response", "        \"406\": {$ref: \"#/components/responses/NotAcceptable\"}\n        \"429\"", "        default: {$ref: \"#/components/responses/NotAcceptable\"}\n        \"429\"", "only explicit statuses"},
		{"array header", "      schema: {type: string, enum: [no-store]}", "      schema: {type: array, items: {type: string}}", "only string and integer headers"},
		{"invalid document", "  /health:\n    get:\n", "  /health:\n    got:\n", "validate"},
		{"not YAML", "openapi: 3.1.0", "openapi: [3.1.0", "load"},
	}
	for _, tc := range cases {
		if !strings.Contains(doc, tc.old) {
			t.Fatalf("%s: fixture text %q not in the document", tc.name, tc.old)
		}
		_, err := load([]byte(strings.Replace(doc, tc.old, tc.new, 1)))
		if err == nil {
			t.Errorf("%s: loaded, want an error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to name %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load("no/such/openapi.yaml"); err == nil {
		t.Errorf("Load of a missing file succeeded")
	}
}
