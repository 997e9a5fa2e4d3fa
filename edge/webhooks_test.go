package edge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// webhookScopes grants a harness key the webhook routes' scope.
var webhookScopes = map[string]any{"scopes": []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage}}

// newWebhookHarness is a harness whose "live" and "test" keys may manage
// webhook endpoints, kept in reg.
func newWebhookHarness(t *testing.T, reg webhooks.Registry, allowHTTP bool) *harness {
	return newHarness(t, harnessOptions{webhooks: reg, webhookAllowHTTP: allowHTTP,
		keyOver: map[string]map[string]any{"live": webhookScopes, "test": webhookScopes}})
}

// endpointBody is the WebhookEndpoint object as sent, every member kept
// raw to tell absent from null.
type endpointBody map[string]json.RawMessage

func (e endpointBody) str(name string) string {
	var s string
	_ = json.Unmarshal(e[name], &s)
	return s
}

var (
	endpointIDPattern = regexp.MustCompile(`^whe_[0-9a-z]{24}$`)
	secretPattern     = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{32}$`) // base64 of 24 bytes
)

func jsonHeaders() map[string][]string {
	return map[string][]string{"Content-Type": {"application/json"}}
}

// create POSTs body for key and returns the answer.
func (h *harness) create(key, body string, headers map[string][]string) (request, response) {
	h.t.Helper()
	if headers == nil {
		headers = jsonHeaders()
	}
	req := request{method: http.MethodPost, path: "/v1/webhook-endpoints", key: key, headers: headers, body: strings.NewReader(body)}
	return req, h.do(req)
}

// created creates an endpoint for key, checks the 201 and returns it.
func (h *harness) created(t *testing.T, key, body string) endpointBody {
	t.Helper()
	req, res := h.create(key, body, nil)
	return created(t, req, res)
}

// created checks a 201 and returns the endpoint it holds.
func created(t *testing.T, req request, res response) endpointBody {
	t.Helper()
	if res.status != http.StatusCreated {
		t.Fatalf("%s: status %d, want 201\n%s", req.path, res.status, short(res.body))
	}
	res.status = http.StatusOK // the envelope is a success's
	var ep endpointBody
	if err := json.Unmarshal(wantOK(t, req, res).Data, &ep); err != nil {
		t.Fatal(err)
	}
	if loc := res.header.Get("Location"); loc != "/v1/webhook-endpoints/"+ep.str("id") {
		t.Errorf("Location %q for id %q", loc, ep.str("id"))
	}
	return ep
}

// docs/contract.md section 26: create (201, Location, the secret once),
// list and get (no secret), delete (204), then not found.
func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, &webhooks.Memory{}, false)
	ep := h.created(t, "live", `{"url":"https://hooks.partner.example/in?t=1","description":"Orders"}`)
	if !endpointIDPattern.MatchString(ep.str("id")) || !secretPattern.MatchString(ep.str("secret")) {
		t.Errorf("id %q secret %q", ep.str("id"), ep.str("secret"))
	}
	if err := webhooks.CheckSecret(ep.str("secret")); err != nil {
		t.Errorf("secret: %v", err)
	}
	want := map[string]string{"object": `"webhook_endpoint"`, "url": `"https://hooks.partner.example/in?t=1"`,
		"description": `"Orders"`, "status": `"enabled"`, "disabledReason": "null"}
	for k, v := range want {
		if string(ep[k]) != v {
			t.Errorf("%s = %s, want %s", k, ep[k], v)
		}
	}
	if !timestampPattern.MatchString(ep.str("createdAt")) {
		t.Errorf("createdAt %s", ep["createdAt"])
	}
	second := h.created(t, "live", `{"url":"https://hooks.partner.example/two"}`)
	if string(second["description"]) != "null" || second.str("secret") == ep.str("secret") || second.str("id") == ep.str("id") {
		t.Errorf("second endpoint %v", second)
	}

	listReq := request{path: "/v1/webhook-endpoints", key: "live"}
	var list []endpointBody
	if err := json.Unmarshal(wantOK(t, listReq, h.do(listReq)).Data, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].str("id") != ep.str("id") || list[1].str("id") != second.str("id") {
		t.Fatalf("list %v", list)
	}
	path := "/v1/webhook-endpoints/" + ep.str("id")
	getReq := request{path: path, key: "live"}
	var got endpointBody
	if err := json.Unmarshal(wantOK(t, getReq, h.do(getReq)).Data, &got); err != nil {
		t.Fatal(err)
	}
	for _, e := range append(list, got) {
		if _, ok := e["secret"]; ok {
			t.Errorf("a list or get answer shows the secret: %v", e)
		}
	}
	if got.str("url") != ep.str("url") || got.str("createdAt") != ep.str("createdAt") {
		t.Errorf("get %v, created %v", got, ep)
	}

	del := request{method: http.MethodDelete, path: path, key: "live"}
	if res := h.do(del); res.status != http.StatusNoContent || len(res.body) != 0 {
		t.Fatalf("delete: %d %q", res.status, res.body)
	}
	wantProblem(t, getReq, h.do(getReq), problem.WebhookEndpointNotFound)
	wantProblem(t, del, h.do(del), problem.WebhookEndpointNotFound)
}

// docs/contract.md section 26: the body's checks, in order: Content-Type,
// size, JSON, names, values.
func TestWebhookEndpointBody(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, &webhooks.Memory{}, false)
	long := func(n int) string { return strings.Repeat("a", n) }
	type fieldErr struct{ field, code string }
	for _, tc := range []struct {
		name    string
		ctype   []string // nil: none sent
		body    string
		code    problem.Code // "": 201
		errs    []fieldErr
		mention string // in detail or the first error's detail
	}{
		{"no content type", nil, `{"url":"https://a.example/"}`, problem.UnsupportedMediaType, nil, "application/json"},
		{"text/plain", []string{"text/plain"}, `{"url":"https://a.example/"}`, problem.UnsupportedMediaType, nil, ""},
		{"other charset", []string{"application/json; charset=latin1"}, `{"url":"https://a.example/"}`, problem.UnsupportedMediaType, nil, ""},
		{"two content types", []string{"application/json", "application/json"}, `{"url":"https://a.example/"}`, problem.UnsupportedMediaType, nil, ""},
		{"charset utf-8", []string{"application/json; charset=UTF-8"}, `{"url":"https://charset.example/"}`, "", nil, ""},
		{"too large, content type wrong too", []string{"text/plain"}, `{"url":"` + long(20000) + `"}`, problem.UnsupportedMediaType, nil, ""},
		{"too large", []string{"application/json"}, `{"url":"https://a.example/","description":"` + long(16400) + `"}`, problem.PayloadTooLarge, nil, "16 KiB"},
		{"not JSON", []string{"application/json"}, `{"url":`, problem.MalformedJSON, nil, ""},
		{"empty", []string{"application/json"}, ``, problem.MalformedJSON, nil, ""},
		{"not an object", []string{"application/json"}, `["https://a.example/"]`, problem.MalformedJSON, nil, "object"},
		{"trailing data", []string{"application/json"}, `{"url":"https://a.example/"} {}`, problem.MalformedJSON, nil, "after"},
		{"duplicate name", []string{"application/json"}, `{"url":"https://a.example/","url":"https://b.example/"}`, problem.MalformedJSON, nil, "twice"},
		{"duplicate name, escaped", []string{"application/json"}, `{"url":"https://a.example/","u\u0072l":"https://b.example/"}`, problem.MalformedJSON, nil, "twice"},
		{"duplicate nested name wins over unknown", []string{"application/json"}, `{"url":"https://a.example/","x":[{"a":1,"a":2}]}`, problem.MalformedJSON, nil, "twice"},
		{"invalid UTF-8", []string{"application/json"}, "{\"url\":\"https://a.example/\",\"description\":\"\xff\"}", problem.MalformedJSON, nil, "UTF-8"},
		{"wrong casing", []string{"application/json"}, `{"URL":"https://a.example/"}`, problem.UnknownBodyField, []fieldErr{{"URL", problem.FieldUnknownField}}, "did you mean url"},
		{"unknown names", []string{"application/json"}, `{"url":"https://a.example/","secret":"x","Description":"y"}`, problem.UnknownBodyField,
			[]fieldErr{{"secret", problem.FieldUnknownField}, {"Description", problem.FieldUnknownField}}, ""},
		{"url missing", []string{"application/json"}, `{}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldRequired}}, ""},
		{"url null", []string{"application/json"}, `{"url":null}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldRequired}}, ""},
		{"url not a string", []string{"application/json"}, `{"url":5}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, ""},
		{"http", []string{"application/json"}, `{"url":"http://a.example/"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, "https"},
		{"relative", []string{"application/json"}, `{"url":"/hooks"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, ""},
		{"other scheme", []string{"application/json"}, `{"url":"ftp://a.example/"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, ""},
		{"user info", []string{"application/json"}, `{"url":"https://u:p@a.example/"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, "user info"},
		{"fragment", []string{"application/json"}, `{"url":"https://a.example/#x"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, "fragment"},
		{"space", []string{"application/json"}, `{"url":"https://a.example/a b"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldInvalidFormat}}, ""},
		{"url too long", []string{"application/json"}, `{"url":"https://a.example/` + long(2048) + `"}`, problem.ValidationFailed, []fieldErr{{"url", problem.FieldTooLong}}, "2048"},
		{"every invalid field", []string{"application/json"}, `{"url":"","description":"` + long(201) + `"}`, problem.ValidationFailed,
			[]fieldErr{{"url", problem.FieldRequired}, {"description", problem.FieldTooLong}}, ""},
		{"description not a string", []string{"application/json"}, `{"url":"https://a.example/","description":1}`, problem.ValidationFailed,
			[]fieldErr{{"description", problem.FieldInvalidFormat}}, ""},
		{"description null", []string{"application/json"}, `{"url":"https://null.example/","description":null}`, "", nil, ""},
		{"longest", []string{"application/json"}, `{"url":"https://a.example/` + long(2048-len("https://a.example/")) + `","description":"` + strings.Repeat("é", 200) + `"}`, "", nil, ""},
	} {
		headers := map[string][]string{"Content-Type": tc.ctype}
		req, res := h.create("live", tc.body, headers)
		if tc.code == "" {
			created(t, req, res)
			continue
		}
		p := wantProblem(t, req, res, tc.code)
		if len(p.Errors) != len(tc.errs) {
			t.Errorf("%s: errors %v, want %v", tc.name, p.Errors, tc.errs)
		} else {
			for i, e := range tc.errs {
				if p.Errors[i].Field != e.field || p.Errors[i].Code != e.code {
					t.Errorf("%s: errors %v, want %v", tc.name, p.Errors, tc.errs)
				}
			}
		}
		text := p.Detail
		if len(p.Errors) > 0 {
			text += " " + p.Errors[0].Detail
		}
		if !strings.Contains(text, tc.mention) {
			t.Errorf("%s: %q does not mention %q", tc.name, text, tc.mention)
		}
	}

	// A route that takes no body refuses one; the list takes no query.
	ep := h.created(t, "live", `{"url":"https://nobody.example/"}`)
	for _, req := range []request{
		{method: http.MethodGet, path: "/v1/webhook-endpoints", key: "live", headers: jsonHeaders(), body: strings.NewReader(`{}`)},
		{method: http.MethodGet, path: "/v1/webhook-endpoints/" + ep.str("id"), key: "live", body: strings.NewReader(`{}`)},
		{method: http.MethodDelete, path: "/v1/webhook-endpoints/" + ep.str("id"), key: "live", body: strings.NewReader(`{}`)},
		{method: http.MethodPost, path: "/v1/webhook-endpoints/" + ep.str("id") + "/enable", key: "live", headers: jsonHeaders(), body: strings.NewReader(`{}`)},
	} {
		wantProblem(t, req, h.do(req), problem.UnexpectedRequestBody)
	}
	req := request{path: "/v1/webhook-endpoints?page=1", key: "live"}
	wantProblem(t, req, h.do(req), problem.UnknownQueryParameter)
}

// EDGE_WEBHOOK_ALLOW_HTTP lets http URLs through.
func TestWebhookEndpointAllowHTTP(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, &webhooks.Memory{}, true)
	ep := h.created(t, "live", `{"url":"http://receiver.test:8080/hooks"}`)
	if ep.str("url") != "http://receiver.test:8080/hooks" {
		t.Errorf("url %q", ep.str("url"))
	}
}

// docs/contract.md section 26: one url once per key, at most 10 per key;
// another key's endpoints are not found, whatever it tries; an unknown or
// malformed id is not found either.
func TestWebhookEndpointsPerKey(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, &webhooks.Memory{}, false)
	var first endpointBody
	for i := range webhooks.MaxPerKey {
		ep := h.created(t, "live", `{"url":"https://p.example/`+string(rune('a'+i))+`"}`)
		if i == 0 {
			first = ep
		}
	}
	req, res := h.create("live", `{"url":"https://p.example/a"}`, nil)
	wantProblem(t, req, res, problem.WebhookEndpointExists)
	req, res = h.create("live", `{"url":"https://p.example/new"}`, nil)
	wantProblem(t, req, res, problem.WebhookEndpointLimit)
	other := h.created(t, "test", `{"url":"https://p.example/a"}`) // another key: its own url and count

	listReq := request{path: "/v1/webhook-endpoints", key: "test"}
	var list []endpointBody
	if err := json.Unmarshal(wantOK(t, listReq, h.do(listReq)).Data, &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].str("id") != other.str("id") {
		t.Errorf("the test key lists %v", list)
	}
	id := first.str("id")
	for _, path := range []string{"/v1/webhook-endpoints/" + id, "/v1/webhook-endpoints/whe_0000000000000000000000zz",
		"/v1/webhook-endpoints/whe_short", "/v1/webhook-endpoints/WHE_" + strings.ToUpper(id[4:])} {
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			req := request{method: m, path: path, key: "test"}
			wantProblem(t, req, h.do(req), problem.WebhookEndpointNotFound)
		}
		req := request{method: http.MethodPost, path: path + "/enable", key: "test"}
		wantProblem(t, req, h.do(req), problem.WebhookEndpointNotFound)
	}
	getReq := request{path: "/v1/webhook-endpoints/" + id, key: "live"}
	wantOK(t, getReq, h.do(getReq)) // still there
}

// docs/contract.md section 26: the routes need webhooks:manage besides
// properties:read (403 INSUFFICIENT_SCOPE, before the request checks); a
// method a route does not serve is 405 with Allow naming those it does.
func TestWebhookRoutesScopeAndMethods(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, &webhooks.Memory{}, false)
	id := "whe_0000000000000000000000aa"
	for _, req := range []request{
		{path: "/v1/webhook-endpoints", key: "granted"},
		{method: http.MethodPost, path: "/v1/webhook-endpoints", key: "granted", body: strings.NewReader(`not json`)},
		{path: "/v1/webhook-endpoints/" + id, key: "granted", noUA: true},
		{method: http.MethodDelete, path: "/v1/webhook-endpoints/" + id, key: "noscope"},
		{method: http.MethodPost, path: "/v1/webhook-endpoints/" + id + "/enable", key: "granted"},
	} {
		p := wantProblem(t, req, h.do(req), problem.InsufficientScope)
		if req.key == "granted" && !strings.Contains(p.Detail, keys.ScopeWebhooksManage) {
			t.Errorf("%s %s: detail %q does not name the scope", req.method, req.path, p.Detail)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{http.MethodPut, "/v1/webhook-endpoints", "GET, POST"},
		{http.MethodDelete, "/v1/webhook-endpoints", "GET, POST"},
		{http.MethodPost, "/v1/webhook-endpoints/" + id, "GET, DELETE"},
		{http.MethodGet, "/v1/webhook-endpoints/" + id + "/enable", "POST"},
		{http.MethodHead, "/v1/webhook-endpoints", "GET, POST"},
		{http.MethodPost, "/v1/properties", "GET"},
	} {
		req := request{method: tc.method, path: tc.path, key: "live"}
		res := h.do(req)
		if tc.method != http.MethodHead {
			wantProblem(t, req, res, problem.MethodNotAllowed)
		}
		if res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 %q", tc.method, tc.path, res.status, res.header.Get("Allow"), tc.allow)
		}
	}
}

// Without a registry (a single edge without EDGE_DATA_DIR) the routes
// answer 503 naming the setting.
func TestWebhookRoutesWithoutRegistry(t *testing.T) {
	t.Parallel()
	h := newWebhookHarness(t, nil, false)
	for _, req := range []request{
		{path: "/v1/webhook-endpoints", key: "live"},
		{method: http.MethodPost, path: "/v1/webhook-endpoints", key: "live", headers: jsonHeaders(), body: strings.NewReader(`{"url":"https://a.example/"}`)},
		{path: "/v1/webhook-endpoints/whe_0000000000000000000000aa", key: "live"},
	} {
		res := h.do(req)
		p := wantProblem(t, req, res, problem.ServiceUnavailable)
		if !strings.Contains(p.Detail, "EDGE_DATA_DIR") || res.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: detail %q, Retry-After %q", req.method, req.path, p.Detail, res.header.Get("Retry-After"))
		}
	}
}

// docs/contract.md section 26: enabling resumes a disabled endpoint from
// its position; once the feed no longer holds it, 410
// EVENTS_CURSOR_EXPIRED, and enabling again starts from now.
func TestWebhookEndpointEnable(t *testing.T) {
	t.Parallel()
	reg := &webhooks.Memory{}
	h := newWebhookHarness(t, reg, false)
	ctx := t.Context()
	ep := h.created(t, "live", `{"url":"https://enable.example/"}`)
	id := ep.str("id")
	stored, err := reg.Endpoint(ctx, id)
	if err != nil || !h.feeds.Live.Valid(stored.After) {
		t.Fatalf("created at %q (%v): not a position of the live feed", stored.After, err)
	}
	enable := request{method: http.MethodPost, path: "/v1/webhook-endpoints/" + id + "/enable", key: "live"}
	get := request{path: "/v1/webhook-endpoints/" + id, key: "live"}
	status := func(req request) endpointBody {
		t.Helper()
		var e endpointBody
		if err := json.Unmarshal(wantOK(t, req, h.do(req)).Data, &e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if e := status(enable); e.str("status") != "enabled" { // enabled already: as it is
		t.Fatalf("enable of an enabled endpoint: %v", e)
	}

	// Disabled after failures: enabling resumes from where it stood.
	if err := reg.Disable(ctx, id, stored.After, "http_503", time.Now()); err != nil {
		t.Fatal(err)
	}
	if e := status(get); e.str("status") != "disabled" || e.str("disabledReason") != "http_503" {
		t.Fatalf("disabled endpoint reads %v", e)
	}
	if e := status(enable); e.str("status") != "enabled" || string(e["disabledReason"]) != "null" {
		t.Fatalf("enabled endpoint reads %v", e)
	}
	if again, _ := reg.Endpoint(ctx, id); again.After != stored.After || again.Status != webhooks.StatusEnabled {
		t.Fatalf("enabled at %q %s, want %q", again.After, again.Status, stored.After)
	}

	// A position the live feed does not hold (here one of the sandbox's
	// feed): 410, still disabled, and the next enable starts from now.
	tr := request{path: "/v1/properties", key: "test"}
	var ev struct {
		Meta struct{ Events struct{ Next string } } `json:"meta"`
	}
	if err := json.Unmarshal(h.do(tr).body, &ev); err != nil || ev.Meta.Events.Next == "" {
		t.Fatalf("no sandbox cursor: %v", err)
	}
	if err := reg.SetProgress(ctx, id, stored.After, webhooks.Progress{After: ev.Meta.Events.Next}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Disable(ctx, id, ev.Meta.Events.Next, "timeout", time.Now()); err != nil {
		t.Fatal(err)
	}
	p := wantProblem(t, enable, h.do(enable), problem.EventsCursorExpired)
	if !strings.Contains(p.Detail, "enable") {
		t.Errorf("410 detail %q", p.Detail)
	}
	if e := status(get); e.str("status") != "disabled" || e.str("disabledReason") != string(webhooks.EventsExpired) {
		t.Fatalf("after 410 the endpoint reads %v", e)
	}
	if e := status(enable); e.str("status") != "enabled" {
		t.Fatalf("second enable: %v", e)
	}
	if now, _ := reg.Endpoint(ctx, id); !h.feeds.Live.Valid(now.After) || now.Status != webhooks.StatusEnabled {
		t.Errorf("restarted at %q %s", now.After, now.Status)
	}
}

// chainKeys is the harness's key store, told that key_granted replaced
// key_live by rotation (as keys.Store tells it from the key file).
type chainKeys struct {
	edge.KeyStore
}

func (chainKeys) Predecessors(id string) []string {
	if id == "key_granted" {
		return []string{"key_live"}
	}
	return nil
}

// docs/contract.md section 26: a rotated key's successor keeps its
// endpoints: it lists, gets, enables and deletes them, and its own count
// and urls include them; the old key still sees its own.
func TestWebhookEndpointsFollowARotatedKey(t *testing.T) {
	reg := &webhooks.Memory{}
	h := newHarness(t, harnessOptions{webhooks: reg,
		keyOver:  map[string]map[string]any{"live": webhookScopes, "test": webhookScopes, "granted": webhookScopes},
		wrapKeys: func(ks edge.KeyStore) edge.KeyStore { return chainKeys{ks} }})
	old := h.created(t, "live", `{"url":"https://example.com/a"}`)

	req := request{path: "/v1/webhook-endpoints", key: "granted"}
	var list []endpointBody
	if err := json.Unmarshal(wantOK(t, req, h.do(req)).Data, &list); err != nil || len(list) != 1 || list[0].str("id") != old.str("id") {
		t.Fatalf("the successor lists %v (%v); want the old key's endpoint", list, err)
	}
	get := request{path: "/v1/webhook-endpoints/" + old.str("id"), key: "granted"}
	wantOK(t, get, h.do(get))

	if req, res := h.create("granted", `{"url":"https://example.com/a"}`, nil); res.status != http.StatusConflict ||
		!strings.Contains(string(res.body), "WEBHOOK_ENDPOINT_EXISTS") {
		t.Errorf("%s: the old key's url again: %d %s; want 409 WEBHOOK_ENDPOINT_EXISTS", req.path, res.status, short(res.body))
	}
	for i := 1; i < webhooks.MaxPerKey; i++ {
		h.created(t, "granted", fmt.Sprintf(`{"url":"https://example.com/%d"}`, i))
	}
	if req, res := h.create("granted", `{"url":"https://example.com/last"}`, nil); res.status != http.StatusConflict ||
		!strings.Contains(string(res.body), "WEBHOOK_ENDPOINT_LIMIT") {
		t.Errorf("%s: an eleventh with the old key's: %d %s; want 409 WEBHOOK_ENDPOINT_LIMIT", req.path, res.status, short(res.body))
	}

	// Another key holds nothing of either.
	other := request{path: "/v1/webhook-endpoints/" + old.str("id"), key: "test"}
	if res := h.do(other); res.status != http.StatusNotFound {
		t.Errorf("another key: %d; want 404", res.status)
	}
	del := request{method: http.MethodDelete, path: "/v1/webhook-endpoints/" + old.str("id"), key: "granted"}
	if res := h.do(del); res.status != http.StatusNoContent {
		t.Fatalf("the successor deletes the old key's endpoint: %d %s; want 204", res.status, short(res.body))
	}
}
