package openapitest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/oasdiff/yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL names the document as a JSON Schema resource; schemas are compiled
// from JSON pointers into it, so their $refs resolve within the document.
const docURL = "urn:partner-edge:openapi"

// Load reads the OpenAPI 3.1 document at path, validates it (kin-openapi's
// (*openapi3.T).Validate), checks that every server ends in /v1, and compiles
// the headers and body schema of every response of every operation, and of
// the components.responses that answer requests matching no route
// (RoutingBadRequest, RouteNotFound, MethodNotAllowed, InternalError,
// ServiceUnavailable).
func Load(path string) (*Checker, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	c, err := load(data)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %s: %w", path, err)
	}
	return c, nil
}

func load(data []byte) (*Checker, error) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		return nil, fmt.Errorf("openapi %q: want 3.1.x (schemas are JSON Schema 2020-12)", doc.OpenAPI)
	}
	for _, s := range doc.Servers {
		if !strings.HasSuffix(s.URL, prefix) {
			return nil, fmt.Errorf("server %q does not end in %s", s.URL, prefix)
		}
	}
	// Route on paths alone: Check strips the prefix itself, whatever the host.
	routing := *doc
	routing.Servers = nil
	router, err := gorillamux.NewRouter(&routing)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}

	jsonDoc, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("to JSON: %w", err)
	}
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(jsonDoc))
	if err != nil {
		return nil, fmt.Errorf("to JSON: %w", err)
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	if err := comp.AddResource(docURL, raw); err != nil {
		return nil, fmt.Errorf("schema resource: %w", err)
	}

	c := &Checker{router: router, ops: map[string]*operation{}}
	for _, p := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(p).Operations() {
			base := "#/paths/" + pointerEscape(p) + "/" + strings.ToLower(method) + "/responses/"
			o := &operation{name: method + " " + p, responses: map[int]*docResponse{}}
			for code, ref := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				if err != nil {
					return nil, fmt.Errorf("%s: response %q: only explicit statuses are supported", o.name, code)
				}
				if o.responses[status], err = compileResponse(comp, ref, base+code, o.name+" "+code); err != nil {
					return nil, fmt.Errorf("%s: %w", o.name, err)
				}
			}
			c.ops[method+" "+p] = o
		}
	}
	c.unrouted = &operation{name: "a request matching no route", responses: map[int]*docResponse{}}
	for status, name := range unroutedResponses {
		ref := doc.Components.Responses[name]
		if ref == nil || ref.Value == nil {
			return nil, fmt.Errorf("no components.responses.%s", name)
		}
		if c.unrouted.responses[status], err = compileResponse(comp, ref, "#/components/responses/"+name, name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// compileResponse compiles the response at loc (or at the component its
// $ref names); label names it in errors.
func compileResponse(comp *jsonschema.Compiler, ref *openapi3.ResponseRef, loc, label string) (*docResponse, error) {
	if ref.Ref != "" {
		loc = ref.Ref
		label += " (" + strings.TrimPrefix(loc, "#/") + ")"
	}
	if !strings.HasPrefix(loc, "#/") {
		return nil, fmt.Errorf("response %s: only local $refs are supported", loc)
	}
	r := &docResponse{name: label}
	for _, name := range slices.Sorted(maps.Keys(ref.Value.Headers)) {
		href := ref.Value.Headers[name]
		if strings.EqualFold(name, "Content-Type") {
			continue // ignored by OpenAPI; Content-Type is checked against content
		}
		hloc := loc + "/headers/" + pointerEscape(name)
		if href.Ref != "" {
			hloc = href.Ref
		}
		h := href.Value
		if h.Content != nil || h.Schema == nil || h.Schema.Value == nil {
			return nil, fmt.Errorf("%s: header %s: only headers with a schema are supported", loc, name)
		}
		t := h.Schema.Value.Type
		if !t.Is(openapi3.TypeString) && !t.Is(openapi3.TypeInteger) {
			return nil, fmt.Errorf("%s: header %s: only string and integer headers are supported", loc, name)
		}
		sch, err := comp.Compile(docURL + hloc + "/schema")
		if err != nil {
			return nil, fmt.Errorf("%s: header %s: %w", loc, name, err)
		}
		r.headers = append(r.headers, header{
			name:     http.CanonicalHeaderKey(name),
			required: h.Required,
			integer:  t.Is(openapi3.TypeInteger),
			schema:   sch,
		})
	}
	if len(ref.Value.Content) > 1 {
		return nil, fmt.Errorf("%s: more than one media type", loc)
	}
	for mt, media := range ref.Value.Content {
		if media.Schema == nil {
			return nil, fmt.Errorf("%s: %s has no schema", loc, mt)
		}
		sch, err := comp.Compile(docURL + loc + "/content/" + pointerEscape(mt) + "/schema")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		r.mediaType, r.body = mt, sch
	}
	return r, nil
}

// pointerEscape escapes s as one JSON pointer token (RFC 6901) in a URI
// fragment.
func pointerEscape(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	s = strings.ReplaceAll(s, "/", "~1")
	return strings.NewReplacer("{", "%7B", "}", "%7D").Replace(s)
}
