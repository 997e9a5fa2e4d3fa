package openapitest

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/partner-edge/partner-edge/problem"
)

// loadDoc loads the document with kin-openapi alone.
func loadDoc(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(docPath)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

func TestDocumentLoadsAndValidates(t *testing.T) {
	doc := loadDoc(t)
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q, want 3.1.0", doc.OpenAPI)
	}
	if _, err := Load(docPath); err != nil {
		t.Fatalf("Load: %v", err)
	}

	// The routes of docs/contract.md section 1, each with the methods it
	// serves (section 26 added the webhook endpoints').
	wantPaths := map[string][]string{"/": {"GET"}, "/events": {"GET"}, "/health": {"GET"}, "/properties": {"GET"},
		"/properties/{propertyId}": {"GET"}, "/webhook-endpoints": {"GET", "POST"},
		"/webhook-endpoints/{endpointId}": {"DELETE", "GET"}, "/webhook-endpoints/{endpointId}/enable": {"POST"}}
	if got, want := slices.Sorted(maps.Keys(doc.Paths.Map())), slices.Sorted(maps.Keys(wantPaths)); !slices.Equal(got, want) {
		t.Errorf("paths = %v, want %v (docs/contract.md section 1)", got, want)
	}
	for p, methods := range wantPaths {
		item := doc.Paths.Value(p)
		if item == nil || !slices.Equal(slices.Sorted(maps.Keys(item.Operations())), methods) {
			t.Errorf("%s: want the operations %v", p, methods)
		}
	}

	srv := doc.Servers[0]
	if srv.URL != "https://{service}.{brand}.example.com/v1" || srv.Variables["service"] == nil || srv.Variables["brand"] == nil {
		t.Errorf("first server = %q with variables %v, want the {base_url} shape", srv.URL, slices.Collect(maps.Keys(srv.Variables)))
	}
	for _, s := range doc.Servers {
		if !strings.HasPrefix(s.URL, "https://") {
			t.Errorf("server %q: the edge is reached over HTTPS only", s.URL)
		}
		if internal, ok := s.Extensions["x-internal"].(bool); !ok || internal {
			t.Errorf("server %q: x-internal = %v, want false (a public API)", s.URL, s.Extensions["x-internal"])
		}
	}
	bearer := doc.Components.SecuritySchemes["bearerAuth"]
	if bearer == nil || bearer.Value.Type != "http" || bearer.Value.Scheme != "bearer" {
		t.Errorf("bearerAuth = %+v, want an http bearer scheme", bearer)
	}
	if sec := doc.Paths.Value("/health").Get.Security; sec == nil || len(*sec) != 0 {
		t.Errorf("/health security = %v, want [] (unauthenticated)", sec)
	}
	for _, p := range []string{"/", "/properties", "/properties/{propertyId}", "/events"} {
		if doc.Paths.Value(p).Get.Security != nil {
			t.Errorf("%s overrides the global bearer security", p)
		}
	}

	perPage := doc.Components.Parameters["PerPage"].Value.Schema.Value
	page := doc.Components.Parameters["Page"].Value.Schema.Value
	if perPage.Default != float64(50) || *perPage.Min != 1 || *perPage.Max != 100 {
		t.Errorf("perPage = default %v, [%v, %v]; want 50, [1, 100]", perPage.Default, *perPage.Min, *perPage.Max)
	}
	if page.Default != float64(1) || *page.Min != 1 {
		t.Errorf("page = default %v, minimum %v; want 1, 1", page.Default, *page.Min)
	}
}

// codeSet reads a list of strings decoded from the document.
func codeSet(t *testing.T, where string, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: %T, want a list", where, v)
	}
	var out []string
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("%s: %v is not a string", where, x)
		}
		out = append(out, s)
	}
	return out
}

func TestProblemCodeEnumMatchesRegistry(t *testing.T) {
	doc := loadDoc(t)
	code := doc.Components.Schemas["Problem"].Value.Properties["code"].Value
	var registry []string
	for _, e := range problem.All() {
		registry = append(registry, string(e.Code))
	}
	enum := codeSet(t, "Problem.code.enum", code.Enum)
	if got, want := slices.Sorted(slices.Values(enum)), slices.Sorted(slices.Values(registry)); !slices.Equal(got, want) {
		t.Errorf("Problem.code enum = %v\nregistry = %v", got, want)
	}
	// The description table documents each code exactly as the registry does.
	for _, e := range problem.All() {
		row := fmt.Sprintf("| `%s` | %d | %s | %s |", e.Code, e.Status, e.Title, e.Explanation)
		if !strings.Contains(code.Description, row) {
			t.Errorf("Problem.code description lacks the row\n%s", row)
		}
	}
	if n := strings.Count(code.Description, "\n| `"); n != len(problem.All()) {
		t.Errorf("Problem.code description has %d code rows, registry %d", n, len(problem.All()))
	}
}

func TestFieldErrorCodesMatchRegistry(t *testing.T) {
	doc := loadDoc(t)
	got := codeSet(t, "FieldError.code.enum", doc.Components.Schemas["FieldError"].Value.Properties["code"].Value.Enum)
	want := []string{problem.FieldRequired, problem.FieldInvalidFormat, problem.FieldInvalidEnumValue,
		problem.FieldOutOfRange, problem.FieldTooLong, problem.FieldUnknownParameter, problem.FieldUnknownField}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("FieldError.code enum = %v, want %v", got, want)
	}
}

// responseCodes is the code enum of a problem response's schema. The
// schema is a $ref to a concrete object schema (no allOf overlay), whose
// status and code are typed enums, so that client generators give them
// concrete types (docs/contract.md section 13); its status is the registry's status of every
// code it lists, and its fields are Problem's.
func responseCodes(t *testing.T, where string, ref *openapi3.ResponseRef) []string {
	t.Helper()
	mt := ref.Value.Content.Get("application/problem+json")
	if mt == nil || len(ref.Value.Content) != 1 {
		t.Fatalf("%s: want one media type, application/problem+json", where)
	}
	s := mt.Schema.Value
	if mt.Schema.Ref == "" || len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) > 0 || !s.Type.Is(openapi3.TypeObject) {
		t.Fatalf("%s: schema is not a $ref to a plain object schema", where)
	}
	status, code := s.Properties["status"], s.Properties["code"]
	if status == nil || code == nil || s.Properties["errors"] == nil ||
		!status.Value.Type.Is(openapi3.TypeInteger) || len(status.Value.Enum) != 1 ||
		!code.Value.Type.Is(openapi3.TypeString) || len(code.Value.Enum) == 0 ||
		!s.Properties["errors"].Value.Type.Is(openapi3.TypeArray) {
		t.Fatalf("%s: status, code and errors are not a typed integer enum, string enum and array", where)
	}
	problemSchema := loadDoc(t).Components.Schemas["Problem"].Value
	if got, want := slices.Sorted(maps.Keys(s.Properties)), slices.Sorted(maps.Keys(problemSchema.Properties)); !slices.Equal(got, want) {
		t.Errorf("%s: fields %v, Problem's %v", where, got, want)
	}
	if !slices.Equal(s.Required, problemSchema.Required) {
		t.Errorf("%s: required %v, Problem's %v", where, s.Required, problemSchema.Required)
	}
	codes := codeSet(t, where+" code enum", code.Value.Enum)
	for _, c := range codes {
		if st := problem.Lookup(problem.Code(c)).Status; float64(st) != status.Value.Enum[0] {
			t.Errorf("%s: status %v, but %s is a %d", where, status.Value.Enum[0], c, st)
		}
	}
	return codes
}

// TestRouteProblemCodes proves each operation's x-problem-codes agrees with
// its responses and with the registry, and that every code of the registry
// is answered somewhere (PROPERTY_ACCESS_DENIED excepted: no v1 route is
// property-scoped).
func TestRouteProblemCodes(t *testing.T) {
	doc := loadDoc(t)
	seen := map[string]bool{}
	for _, p := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(p).Operations() {
			raw, ok := op.Extensions["x-problem-codes"].(map[string]any)
			if !ok {
				t.Errorf(method+" %s: no x-problem-codes map", p)
				continue
			}
			for status, ref := range op.Responses.Map() {
				n, _ := strconv.Atoi(status)
				if ref.Value.Content.Get("application/problem+json") == nil {
					if _, listed := raw[status]; listed || n < 200 || (n >= 300 && p != "/health") {
						t.Errorf(method+" %s %s: listed in x-problem-codes or an error status, but not problem+json", p, status)
					}
					continue
				}
				listed := codeSet(t, method+" "+p+" x-problem-codes "+status, raw[status])
				if got := responseCodes(t, method+" "+p+" "+status, ref); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(listed))) {
					t.Errorf(method+" %s %s: response codes %v, x-problem-codes %v", p, status, got, listed)
				}
				for _, c := range listed {
					if !problem.Known(problem.Code(c)) || problem.Lookup(problem.Code(c)).Status != n {
						t.Errorf(method+" %s: %s listed under %s, registry says %d", p, c, status, problem.Lookup(problem.Code(c)).Status)
					}
					seen[c] = true
				}
			}
			for status := range raw {
				if op.Responses.Value(status) == nil {
					t.Errorf(method+" %s: x-problem-codes lists %s, which has no response", p, status)
				}
			}
		}
	}
	for status, name := range unroutedResponses {
		for _, c := range responseCodes(t, name, doc.Components.Responses[name]) {
			if problem.Lookup(problem.Code(c)).Status != status {
				t.Errorf("%s: %s is not a %d code", name, c, status)
			}
			seen[c] = true
		}
	}
	for _, e := range problem.All() {
		if !seen[string(e.Code)] && e.Code != problem.PropertyAccessDenied {
			t.Errorf("%s is answered by no operation of the document", e.Code)
		}
	}
	if seen[string(problem.PropertyAccessDenied)] {
		t.Errorf("PROPERTY_ACCESS_DENIED is listed on a v1 route; none is property-scoped (docs/contract.md section 3)")
	}
}

// TestEveryResponseCarriesCommonHeaders: Svc-Request-Id, Cache-Control and
// X-Content-Type-Options are required on every response (docs/contract.md section 4);
// Strict-Transport-Security is declared on every response (sent over TLS);
// every 429 and 503 requires Retry-After; every response of an authenticated
// operation that can follow authentication declares the rate-limit fields
// of docs/contract.md section 10 (optional: sent only while per-key limiting is on).
func TestEveryResponseCarriesCommonHeaders(t *testing.T) {
	c := checker(t)
	ops := map[string]*operation{"unrouted": c.unrouted}
	maps.Copy(ops, c.ops)
	for name, op := range ops {
		authenticated := name != "unrouted" && name != "GET /health"
		for status, r := range op.responses {
			required := map[string]bool{}
			for _, h := range r.headers {
				required[h.name] = h.required
			}
			for _, h := range []string{"Svc-Request-Id", "Cache-Control", "X-Content-Type-Options"} {
				if !required[h] {
					t.Errorf("%s %d: %s is not a required header", name, status, h)
				}
			}
			if req, declared := required["Strict-Transport-Security"]; !declared || req {
				t.Errorf("%s %d: Strict-Transport-Security is not declared optional", name, status)
			}
			want := map[int]string{http.StatusUnauthorized: "Www-Authenticate", http.StatusMethodNotAllowed: "Allow",
				http.StatusTooManyRequests: "Retry-After", http.StatusServiceUnavailable: "Retry-After"}[status]
			if want != "" && !required[want] {
				t.Errorf("%s %d: %s is not required", name, status, want)
			}
			// 401 and 405 always come before a key is known (docs/contract.md
			// 2), and health is never limited; a 500 or 503 may come before
			// or after authentication (their components serve both).
			beforeAuth := status == http.StatusUnauthorized || status == http.StatusMethodNotAllowed ||
				name == "GET /health" && status != http.StatusInternalServerError
			for _, h := range []string{"Ratelimit-Policy", "Ratelimit"} {
				req, declared := required[h]
				switch {
				case authenticated && !beforeAuth && (!declared || req):
					t.Errorf("%s %d: %s is not declared optional", name, status, h)
				case beforeAuth && declared:
					t.Errorf("%s %d: %s is declared on an answer that precedes authentication", name, status, h)
				}
			}
			for _, h := range []string{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"} {
				if _, declared := required[h]; declared {
					t.Errorf("%s %d: %s of the retired draft is declared", name, status, h)
				}
			}
		}
	}
}
