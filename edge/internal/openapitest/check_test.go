package openapitest

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

type checkCase struct {
	name, method, path string
	reply              reply
}

// validReplies are hand-made success responses of every route, in every
// shape the contract allows.
func validReplies(t testing.TB) []checkCase {
	p1 := propertyJSON(t, propID, nil, "active")
	p2 := propertyJSON(t, propID2, strPtr("BER-1"), "active")
	inactive := propertyJSON(t, propID, strPtr("X"), "inactive")
	health := func(status int, s string) reply {
		r := success(`{"status":"` + s + `"}`)
		r.status = status
		return r
	}
	return []checkCase{
		{"api info", "GET", "/v1/", valid0()},
		{"health ok", "GET", "/v1/health", health(200, "ok")},
		{"health ok ignores query", "GET", "/v1/health?x=1", health(200, "ok")},
		{"health unhealthy", "GET", "/v1/health", withHeader(health(503, "unhealthy"), func(h http.Header) { h.Set("Retry-After", "1") })},
		{"health unhealthy with a longer Retry-After", "GET", "/v1/health", withHeader(health(503, "unhealthy"), func(h http.Header) { h.Set("Retry-After", "5") })},
		{"list", "GET", "/v1/properties?page=1&perPage=2", success(`{"data":[` + p1 + `,` + p2 + `],"meta":` + meta(`{"page":1,"perPage":2,"total":7}`) + `}`)},
		{"list past the end", "GET", "/v1/properties?page=9", success(`{"data":[],"meta":` + meta(`{"page":9,"perPage":50,"total":7}`) + `}`)},
		{"one property", "GET", propPath, success(`{"data":` + p2 + `,"meta":` + meta("") + `}`)},
		{"one inactive property, upper-case id", "GET", "/v1/properties/" + strings.ToUpper(propID), success(`{"data":` + inactive + `,"meta":` + meta("") + `}`)},
		{"echoed correlation id and traceparent", "GET", propPath, withHeader(success(`{"data":`+p1+`,"meta":`+meta("")+`}`), func(h http.Header) {
			h.Set("Svc-Correlation-Id", "order/42.a_b=c+d-e")
			h.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		})},
		{"content type with charset", "GET", "/v1/health", withHeader(health(200, "ok"), func(h http.Header) { h.Set("Content-Type", "application/json; charset=utf-8") })},
		{"rate-limit fields while limiting is on", "GET", propPath, withHeader(success(`{"data":`+p1+`,"meta":`+meta("")+`}`), func(h http.Header) {
			h.Set("RateLimit-Policy", rateLimitPolicy)
			h.Set("RateLimit", rateLimit)
		})},
		{"two rate-limit policies", "GET", "/v1/", withHeader(valid0(), func(h http.Header) {
			h.Set("RateLimit-Policy", `"burst";q=20;w=1, "default";q=600;w=60;qu="requests";pk=:cHJvamVjdDEyMw==:`)
			h.Set("RateLimit", `"burst";r=19;t=1,"default";r=598;t=60`)
		})},
		{"HSTS over TLS", "GET", "/v1/health", withHeader(health(200, "ok"), func(h http.Header) { h.Set("Strict-Transport-Security", "max-age=31536000") })},
		{"HSTS with includeSubDomains and preload", "GET", propPath, withHeader(success(`{"data":`+p1+`,"meta":`+meta("")+`}`), func(h http.Header) {
			h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains; preload")
		})},
		{"a full page of 100 properties", "GET", "/v1/properties?perPage=100", success(`{"data":[` + strings.Repeat(p1+`,`, 99) + p1 + `],"meta":` + meta(`{"page":1,"perPage":100,"total":100}`) + `}`)},
		{"events", "GET", "/v1/events?after=" + cursorA + "&limit=2", success(`{"data":[` + eventJSON(cursorB, "property.updated", p1) + `,` +
			eventJSON(cursorB[:29]+"1", "property.removed", inactive) + `],"meta":` + eventsMeta(cursorB[:29]+"1", true) + `}`)},
		{"no events", "GET", "/v1/events?after=" + cursorA, success(`{"data":[],"meta":` + eventsMeta(cursorA, false) + `}`)},
	}
}

// valid0 is the API info answer, the first of validReplies.
func valid0() reply {
	return success(`{"data":{"object":"api_info","apiVersion":"v1","documentationUrl":"` + docsURL + `"},"meta":` + meta("") + `}`)
}

func TestValidSuccessResponsesPass(t *testing.T) {
	c := checker(t)
	for _, tc := range validReplies(t) {
		if err := c.Check(tc.method, tc.path, tc.reply.status, tc.reply.header, tc.reply.body); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestEveryDocumentedProblemPasses writes, with the real problem writer,
// every code each operation documents, and checks it against that operation.
func TestEveryDocumentedProblemPasses(t *testing.T) {
	c := checker(t)
	doc := loadDoc(t)
	paths := map[string]string{"/": "/v1/", "/health": "/v1/health", "/properties": "/v1/properties?page=0", "/properties/{propertyId}": propPath}
	n := 0
	for tmpl, path := range paths {
		raw := doc.Paths.Value(tmpl).Get.Extensions["x-problem-codes"].(map[string]any)
		for status, codes := range raw {
			for _, code := range codeSet(t, tmpl+" "+status, codes) {
				method := http.MethodGet
				if code == string(problem.MethodNotAllowed) {
					method = http.MethodPost
				}
				r := problemReply(method, path, problemFor(problem.Code(code)))
				if strconv.Itoa(r.status) != status {
					t.Fatalf("%s: writer answered %d, document lists it under %s", code, r.status, status)
				}
				if err := c.Check(method, path, r.status, r.header, r.body); err != nil {
					t.Errorf("%s on %s: %v", code, tmpl, err)
				}
				n++
			}
		}
	}
	if n < len(problem.All()) {
		t.Errorf("only %d problems checked", n)
	}
}

func TestUnroutedProblemsPass(t *testing.T) {
	c := checker(t)
	cases := []struct {
		method, path string
		code         problem.Code
	}{
		{"GET", "/v2/x", problem.RouteNotFound},
		{"GET", "/v1", problem.RouteNotFound},
		{"GET", "/", problem.RouteNotFound},
		{"POST", "/v2/x", problem.RouteNotFound},
		{"GET", "/v1/properties/" + propID + "/rooms", problem.RouteNotFound},
		{"GET", "/v1/properties/", problem.TrailingSlash},
		{"GET", "/v1/health/", problem.TrailingSlash},
		{"DELETE", "/v1/properties/", problem.TrailingSlash},
		{"GET", "/v1/Properties", problem.InvalidPathCasing},
		{"GET", "/v1/PROPERTIES/" + propID, problem.InvalidPathCasing},
		{"POST", "/v1/properties", problem.MethodNotAllowed},
		{"OPTIONS", "/v1/", problem.MethodNotAllowed},
		{"DELETE", propPath, problem.MethodNotAllowed},
		{"POST", "/v1/health", problem.MethodNotAllowed},
		{"GET", "/v2/x", problem.InternalError},
		{"GET", "/v2/x", problem.ServiceUnavailable},
	}
	for _, tc := range cases {
		r := problemReply(tc.method, tc.path, problemFor(tc.code))
		if err := c.Check(tc.method, tc.path, r.status, r.header, r.body); err != nil {
			t.Errorf("%s %s %s: %v", tc.method, tc.path, tc.code, err)
		}
	}
	// HEAD: the status and headers are checked; HTTP sends no body.
	r := problemReply("HEAD", "/v1/properties", problemFor(problem.MethodNotAllowed))
	if err := c.Check("HEAD", "/v1/properties", r.status, r.header, nil); err != nil {
		t.Errorf("HEAD 405 without body: %v", err)
	}
	if err := c.Check("HEAD", "/v1/properties", r.status, withHeader(r, func(h http.Header) { h.Del("Allow") }).header, nil); err == nil {
		t.Errorf("HEAD 405 without Allow passed")
	}
}

// TestDriftFails proves the checker fails on each kind of drift, for the
// right reason.
func TestDriftFails(t *testing.T) {
	c := checker(t)
	valid := validReplies(t)
	one := valid[7].reply // one property
	list := valid[5].reply
	info := valid[0].reply
	health := valid[1].reply
	data := func(f func(p map[string]any)) func(m map[string]any) {
		return func(m map[string]any) { f(m["data"].(map[string]any)) }
	}
	body := func(r reply, b []byte) reply { r.body = b; return r }
	notFound := problemReply("GET", propPath, problemFor(problem.PropertyNotFound))
	unauthorized := problemReply("GET", "/v1/properties", problemFor(problem.MissingAuthHeader))
	unavailable := problemReply("GET", "/v1/properties", problemFor(problem.ServiceUnavailable))
	routeNotFound := problemReply("GET", "/v2/x", problemFor(problem.RouteNotFound))
	limited := problemReply("GET", "/v1/properties", problemFor(problem.RateLimited))
	unknownParams := problemReply("GET", "/v1/properties", problemFor(problem.UnknownQueryParameter))

	cases := []struct {
		name, method, path string
		reply              reply
		want               []string // substrings of the error
	}{
		{"extra property field", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["internal"] = map[string]any{"pmsHost": "10.0.0.1"} }))), []string{"/data", "additional properties 'internal'"}},
		{"extra meta field", "GET", propPath, body(one, mutateJSON(t, one.body, func(m map[string]any) { m["meta"].(map[string]any)["version"] = "1.2.3" })), []string{"/meta", "additional properties 'version'"}},
		{"extra top-level field", "GET", "/v1/", body(info, mutateJSON(t, info.body, func(m map[string]any) { m["debug"] = true })), []string{"additional properties 'debug'"}},
		{"missing meta.requestId", "GET", propPath, body(one, mutateJSON(t, one.body, func(m map[string]any) { delete(m["meta"].(map[string]any), "requestId") })), []string{"/meta", "missing property 'requestId'"}},
		{"missing events cursor on a list", "GET", "/v1/properties", body(list, mutateJSON(t, list.body, func(m map[string]any) { delete(m["meta"].(map[string]any), "events") })), []string{"missing property 'events'"}},
		{"a list cursor that is no cursor", "GET", "/v1/properties", body(list, mutateJSON(t, list.body, func(m map[string]any) {
			m["meta"].(map[string]any)["events"] = map[string]any{"next": "12345"}
		})), []string{"/meta/events/next"}},
		{"event of an unknown type", "GET", "/v1/events", body(byName(valid, "events"), mutateJSON(t, byName(valid, "events").body, func(m map[string]any) {
			m["data"].([]any)[0].(map[string]any)["type"] = "property.deleted"
		})), []string{"/data/0/type"}},
		{"event without its property", "GET", "/v1/events", body(byName(valid, "events"), mutateJSON(t, byName(valid, "events").body, func(m map[string]any) {
			delete(m["data"].([]any)[1].(map[string]any), "data")
		})), []string{"/data/1", "missing property 'data'"}},
		{"events without hasMore", "GET", "/v1/events", body(byName(valid, "events"), mutateJSON(t, byName(valid, "events").body, func(m map[string]any) {
			delete(m["meta"].(map[string]any)["events"].(map[string]any), "hasMore")
		})), []string{"missing property 'hasMore'"}},
		{"missing pagination on a list", "GET", "/v1/properties", body(list, mutateJSON(t, list.body, func(m map[string]any) { delete(m["meta"].(map[string]any), "pagination") })), []string{"missing property 'pagination'"}},
		{"missing property field", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { delete(p, "code") }))), []string{"missing property 'code'"}},
		{"timestamp without milliseconds", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["createdAt"] = "2026-11-22T09:41:00Z" }))), []string{"/data/createdAt", "does not match pattern"}},
		{"timestamp with offset", "GET", propPath, body(one, mutateJSON(t, one.body, func(m map[string]any) { m["meta"].(map[string]any)["timestamp"] = "2026-11-22T10:41:00.000+01:00" })), []string{"/meta/timestamp", "does not match pattern"}},
		{"timestamp with microseconds", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["updatedAt"] = "2026-11-22T09:41:00.000001Z" }))), []string{"/data/updatedAt"}},
		{"status deleted", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["status"] = "deleted" }))), []string{"/data/status", "'active', 'inactive'"}},
		{"code a number", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["code"] = 7 }))), []string{"/data/code", "want null or string"}},
		{"object discriminator", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["object"] = "hotel" }))), []string{"/data/object", "'property'"}},
		{"upper-case id in the body", "GET", propPath, body(one, mutateJSON(t, one.body, data(func(p map[string]any) { p["id"] = strings.ToUpper(propID) }))), []string{"/data/id"}},
		{"perPage over the maximum", "GET", "/v1/properties", body(list, mutateJSON(t, list.body, func(m map[string]any) {
			m["meta"].(map[string]any)["pagination"].(map[string]any)["perPage"] = 500
		})), []string{"/meta/pagination/perPage"}},
		{"apiVersion", "GET", "/v1/", body(info, mutateJSON(t, info.body, func(m map[string]any) { m["data"].(map[string]any)["apiVersion"] = "1.0" })), []string{"/data/apiVersion"}},
		{"health with versions", "GET", "/v1/health", body(health, []byte(`{"status":"ok","version":"1.2.3"}`)), []string{"additional properties 'version'"}},
		{"health unhealthy with 200", "GET", "/v1/health", body(health, []byte(`{"status":"unhealthy"}`)), []string{"/status"}},
		{"health in an envelope", "GET", "/v1/health", body(health, []byte(`{"data":{"status":"ok"},"meta":`+meta("")+`}`)), []string{"missing property 'status'"}},
		{"problem missing moreInfo", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { delete(m, "moreInfo") })), []string{"missing property 'moreInfo'"}},
		{"problem errors null", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["errors"] = nil })), []string{"/errors"}},
		{"problem extra field", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["stack"] = "goroutine 1" })), []string{"additional properties 'stack'"}},
		{"problem code not in registry", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["code"] = "NOT_FOUND" })), []string{"/code"}},
		{"problem code of another status", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["code"] = "ROUTE_NOT_FOUND" })), []string{"/code"}},
		{"problem status differs from HTTP", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["status"] = 400 })), []string{"/status"}},
		{"problem timestamp format", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["timestamp"] = "2026-11-22 09:41:00" })), []string{"/timestamp"}},
		{"problem field error code", "GET", "/v1/properties", body(unauthorized, mutateJSON(t, unauthorized.body, func(m map[string]any) {
			m["errors"] = []any{map[string]any{"field": "x", "code": "BAD", "detail": ""}}
		})), []string{"/errors/0/code"}},
		{"problem instance differs from path", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["instance"] = "/v1/properties" })), []string{"instance"}},
		{"problem type of another code", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["type"] = docsURL + "/errors/route-not-found" })), []string{"problem type", "property-not-found"}},
		{"problem requestId differs from header", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["requestId"] = "req_ZZZZZZZZZZZZZZZZZZZZ" })), []string{"requestId"}},
		{"meta.requestId differs from header", "GET", propPath, withHeader(one, func(h http.Header) { h.Set("Svc-Request-Id", "req_ZZZZZZZZZZZZZZZZZZZZ") }), []string{"meta.requestId"}},
		{"undocumented status", "GET", "/v1/properties", reply{418, notFound.header, notFound.body}, []string{"status 418 is not documented"}},
		{"404 on API info", "GET", "/v1/", notFound, []string{"status 404 is not documented for GET /"}},
		{"422 on one property", "GET", propPath, problemReply("GET", propPath, problemFor(problem.ValidationFailed)), []string{"status 422 is not documented"}},
		{"4xx on health", "GET", "/v1/health", problemReply("GET", "/v1/health", problemFor(problem.MissingAuthHeader)), []string{"status 401 is not documented for GET /health"}},
		{"200 on an unknown path", "GET", "/v2/properties", info, []string{"status 200 is not documented for a request matching no route"}},
		{"405 to a GET of an unknown path", "GET", "/v2/x", problemReply("GET", "/v2/x", problemFor(problem.MethodNotAllowed)), []string{"405 to a GET"}},
		{"400 to POST on a known route", "POST", "/v1/properties", problemReply("POST", "/v1/properties", problemFor(problem.InvalidHeader)), []string{"must answer 405"}},
		{"problem as application/json", "GET", propPath, withHeader(notFound, func(h http.Header) { h.Set("Content-Type", "application/json") }), []string{"Content-Type", "application/problem+json"}},
		{"success as problem+json", "GET", propPath, withHeader(one, func(h http.Header) { h.Set("Content-Type", "application/problem+json") }), []string{"Content-Type"}},
		{"success as text/plain", "GET", "/v1/health", withHeader(health, func(h http.Header) { h.Set("Content-Type", "text/plain") }), []string{"Content-Type"}},
		{"no Content-Type", "GET", "/v1/health", withHeader(health, func(h http.Header) { h.Del("Content-Type") }), []string{"Content-Type"}},
		{"body not JSON", "GET", "/v1/health", body(health, []byte("ok\n")), []string{"not JSON"}},
		{"two JSON values", "GET", "/v1/health", body(health, []byte(`{"status":"ok"}{}`)), []string{"not JSON"}},
		{"missing Svc-Request-Id", "GET", "/v2/x", withHeader(routeNotFound, func(h http.Header) { h.Del("Svc-Request-Id") }), []string{"Svc-Request-Id missing"}},
		{"malformed Svc-Request-Id", "GET", "/v1/health", withHeader(health, func(h http.Header) { h.Set("Svc-Request-Id", "abc") }), []string{"Svc-Request-Id"}},
		{"missing Cache-Control", "GET", propPath, withHeader(one, func(h http.Header) { h.Del("Cache-Control") }), []string{"Cache-Control missing"}},
		{"wrong Cache-Control", "GET", propPath, withHeader(one, func(h http.Header) { h.Set("Cache-Control", "max-age=30") }), []string{"Cache-Control"}},
		{"missing nosniff", "GET", propPath, withHeader(one, func(h http.Header) { h.Del("X-Content-Type-Options") }), []string{"X-Content-Type-Options missing"}},
		{"malformed echoed correlation id", "GET", propPath, withHeader(one, func(h http.Header) { h.Set("Svc-Correlation-Id", "has space") }), []string{"Svc-Correlation-Id"}},
		{"malformed Traceparent", "GET", propPath, withHeader(one, func(h http.Header) { h.Set("Traceparent", "garbage") }), []string{"Traceparent"}},
		{"Svc-Request-Id sent twice", "GET", propPath, withHeader(one, func(h http.Header) { h.Add("Svc-Request-Id", reqID) }), []string{"sent 2 times"}},
		{"401 without WWW-Authenticate", "GET", "/v1/properties", withHeader(unauthorized, func(h http.Header) { h.Del("WWW-Authenticate") }), []string{"Www-Authenticate missing"}},
		{"401 with another challenge", "GET", "/v1/properties", withHeader(unauthorized, func(h http.Header) { h.Set("WWW-Authenticate", "Basic") }), []string{"Www-Authenticate"}},
		{"503 without Retry-After", "GET", "/v1/properties", withHeader(unavailable, func(h http.Header) { h.Del("Retry-After") }), []string{"Retry-After missing"}},
		{"503 with an HTTP-date Retry-After", "GET", "/v1/properties", withHeader(unavailable, func(h http.Header) { h.Set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT") }), []string{"not an integer"}},
		{"503 with a negative Retry-After", "GET", "/v1/properties", withHeader(unavailable, func(h http.Header) { h.Set("Retry-After", "-1") }), []string{"Retry-After"}},
		{"405 without Allow", "POST", "/v1/properties", withHeader(problemReply("POST", "/v1/properties", problemFor(problem.MethodNotAllowed)), func(h http.Header) { h.Del("Allow") }), []string{"Allow missing"}},
		{"health 503 without Retry-After", "GET", "/v1/health", withHeader(byName(valid, "health unhealthy"), func(h http.Header) { h.Del("Retry-After") }), []string{"Retry-After missing"}},
		{"429 without Retry-After", "GET", "/v1/properties", withHeader(limited, func(h http.Header) { h.Del("Retry-After") }), []string{"Retry-After missing"}},
		{"Retry-After of zero", "GET", "/v1/properties", withHeader(limited, func(h http.Header) { h.Set("Retry-After", "0") }), []string{"Retry-After", "minimum"}},
		{"Retry-After beyond a day", "GET", "/v1/properties", withHeader(unavailable, func(h http.Header) { h.Set("Retry-After", "86401") }), []string{"Retry-After", "maximum"}},
		{"retired RateLimit integer form", "GET", "/v1/properties", withHeader(limited, func(h http.Header) { h.Set("RateLimit", "0") }), []string{"Ratelimit", "pattern"}},
		{"RateLimit-Policy with an unquoted name", "GET", propPath, withHeader(byName(valid, "rate-limit fields while limiting is on"), func(h http.Header) { h.Set("RateLimit-Policy", "default;q=600;w=60") }), []string{"Ratelimit-Policy", "pattern"}},
		{"RateLimit-Policy without parameters", "GET", propPath, withHeader(byName(valid, "rate-limit fields while limiting is on"), func(h http.Header) { h.Set("RateLimit-Policy", `"default"`) }), []string{"Ratelimit-Policy", "pattern"}},
		{"RateLimit with a policy parameter", "GET", propPath, withHeader(byName(valid, "rate-limit fields while limiting is on"), func(h http.Header) { h.Set("RateLimit", `"default";q=600;t=60`) }), []string{"Ratelimit", "pattern"}},
		{"RateLimit sent twice", "GET", propPath, withHeader(byName(valid, "rate-limit fields while limiting is on"), func(h http.Header) { h.Add("RateLimit", rateLimit) }), []string{"Ratelimit sent 2 times"}},
		{"malformed HSTS", "GET", "/v1/health", withHeader(health, func(h http.Header) { h.Set("Strict-Transport-Security", "max-age=forever") }), []string{"Strict-Transport-Security", "pattern"}},
		{"101 properties on a page", "GET", "/v1/properties", body(list, mutateJSON(t, byName(valid, "a full page of 100 properties").body, func(m map[string]any) {
			m["data"] = append(m["data"].([]any), m["data"].([]any)[0])
		})), []string{"/data", "maxItems"}},
		{"21 errors entries", "GET", "/v1/properties", body(unknownParams, mutateJSON(t, unknownParams.body, func(m map[string]any) {
			for len(m["errors"].([]any)) < 21 {
				m["errors"] = append(m["errors"].([]any), m["errors"].([]any)[0])
			}
		})), []string{"/errors", "maxItems"}},
		{"problem detail of 2049 characters", "GET", propPath, body(notFound, mutateJSON(t, notFound.body, func(m map[string]any) { m["detail"] = strings.Repeat("x", 2049) })), []string{"/detail", "maxLength"}},
		{"errors entry echoing a long name", "GET", "/v1/properties", body(unknownParams, mutateJSON(t, unknownParams.body, func(m map[string]any) {
			m["errors"].([]any)[0].(map[string]any)["field"] = strings.Repeat("n", 513)
		})), []string{"/errors/0/field", "maxLength"}},
		{"total beyond 2^53-1", "GET", "/v1/properties", body(list, mutateJSON(t, list.body, func(m map[string]any) {
			m["meta"].(map[string]any)["pagination"].(map[string]any)["total"] = 1 << 60
		})), []string{"/meta/pagination/total", "maximum"}},
	}
	for _, tc := range cases {
		err := c.Check(tc.method, tc.path, tc.reply.status, tc.reply.header, tc.reply.body)
		if err == nil {
			t.Errorf("%s: passed, want a failure", tc.name)
			continue
		}
		if !containsAll(err.Error(), tc.want...) {
			t.Errorf("%s: error does not name %q:\n%v", tc.name, tc.want, err)
		}
	}
	// Each drifted reply differs from a valid one in one way only: the
	// valid originals pass.
	for _, r := range []reply{notFound, unauthorized, unavailable, limited, unknownParams} {
		if err := c.Check("GET", pathOf(r), r.status, r.header, r.body); err != nil {
			t.Errorf("original of a drift case fails: %v", err)
		}
	}
}

// pathOf reads the request path back from a problem fixture.
func pathOf(r reply) string {
	i := strings.Index(string(r.body), `"instance":"`)
	rest := string(r.body)[i+len(`"instance":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

func TestCheckDoesNotMutateItsArguments(t *testing.T) {
	c := checker(t)
	r := validReplies(t)[5].reply
	h, b := r.header.Clone(), slices.Clone(r.body)
	if err := c.Check("GET", "/v1/properties", r.status, r.header, r.body); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b, r.body) || len(h) != len(r.header) {
		t.Errorf("Check changed its arguments")
	}
}
