package openapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/problem"
)

const (
	docPath  = "../../../docs/openapi.yaml"
	docsURL  = "https://developer.example.com/partner-api"
	reqID    = "req_0123456789abcdefABCD"
	propID   = "0b9f3c1e-8a1d-4f7e-9c2a-1d2e3f4a5b6c"
	propID2  = "1c0a4d2f-9b2e-4a8f-8d3b-2e3f4a5b6c7d"
	propPath = "/v1/properties/" + propID
	// rateLimitPolicy and rateLimit are the rate-limit fields of
	// draft-ietf-httpapi-ratelimit-headers as docs/contract.md section 10 shows
	// them.
	rateLimitPolicy = `"default";q=600;w=60`
	rateLimit       = `"default";r=598;t=60`
)

// fixedNow is the clock of every fixture.
var fixedNow = time.Date(2026, 11, 22, 9, 41, 0, 123_000_000, time.UTC)

func checker(t testing.TB) *Checker { return Contract(t) }

// reply is one response as the edge would send it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// baseHeader holds the headers the edge sets on every response.
func baseHeader(contentType string) http.Header {
	return http.Header{
		"Content-Type":           {contentType},
		"Svc-Request-Id":         {reqID},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
	}
}

func meta(pagination string) string {
	m := `{"requestId":"` + reqID + `","timestamp":"` + fixedNow.Format(mapping.TimeFormat) + `"`
	if pagination != "" {
		m += `,"pagination":` + pagination + `,"events":{"next":"` + cursorA + `"}`
	}
	return m + "}"
}

// Two cursors of the events feed, as the edge writes them.
const (
	cursorA = "evt_05p00001m81a4jj00000004xcr"
	cursorB = "evt_05p00001m81a6d5000000012t0"
)

// eventsMeta is the meta of an events answer.
func eventsMeta(next string, more bool) string {
	return `{"requestId":"` + reqID + `","timestamp":"` + fixedNow.Format(mapping.TimeFormat) +
		`","events":{"next":"` + next + `","hasMore":` + fmt.Sprint(more) + `}}`
}

// eventJSON is an event of type t about the property JSON data.
func eventJSON(id, t, data string) string {
	return `{"object":"event","id":"` + id + `","type":"` + t + `","occurredAt":"` + fixedNow.Format(mapping.TimeFormat) + `","data":` + data + `}`
}

// propertyJSON encodes a Property with the real public encoder.
func propertyJSON(t testing.TB, id string, code *string, status string) string {
	t.Helper()
	b, err := json.Marshal(mapping.Property{
		ID: id, Name: "Aurora Berlin Mitte", Code: code, Status: status, Timezone: "Europe/Berlin",
		CreatedAt: fixedNow.Add(-48 * time.Hour), UpdatedAt: fixedNow,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func success(body string) reply {
	return reply{status: http.StatusOK, header: baseHeader("application/json"), body: []byte(body)}
}

// problemReply writes pe for method and path with the real problem writer,
// plus the headers the edge's middleware adds.
func problemReply(method, path string, pe *problem.Error) reply {
	req := httptest.NewRequest(method, "http://edge.test"+path, nil)
	rec := httptest.NewRecorder()
	for k, vs := range baseHeader("") {
		if k != "Content-Type" {
			rec.Header()[k] = vs
		}
	}
	problem.Writer{DocsURL: docsURL, Now: func() time.Time { return fixedNow }, AppendTime: mapping.AppendTime}.Write(rec, req, reqID, pe)
	return reply{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// problemFor builds the *problem.Error the edge would answer with code,
// including the headers its status requires.
func problemFor(code problem.Code) *problem.Error {
	pe := problem.New(code, "Occurrence of %s.", code)
	switch problem.Lookup(code).Status {
	case http.StatusUnauthorized:
		pe.Header = http.Header{"Www-Authenticate": {`Bearer realm="partner-api", error="invalid_token"`}}
	case http.StatusMethodNotAllowed:
		pe.Header = http.Header{"Allow": {"GET"}}
	case http.StatusTooManyRequests:
		pe.RetryAfter = 3 * time.Second
		pe.Header = http.Header{"Ratelimit-Policy": {rateLimitPolicy}, "Ratelimit": {`"default";r=0;t=3`}}
	case http.StatusUnprocessableEntity:
		pe.Errors = []problem.FieldError{{Field: "perPage", Code: problem.FieldOutOfRange, Detail: "perPage must be 1 to 100."}}
	}
	switch code {
	case problem.UnknownQueryParameter:
		pe.Errors = []problem.FieldError{{Field: "per_page", Code: problem.FieldUnknownParameter, Detail: "Did you mean perPage?"}}
	case problem.InvalidPathParameter:
		pe.Errors = []problem.FieldError{{Field: "propertyId", Code: problem.FieldInvalidFormat, Detail: "Not a UUID."}}
	case problem.MissingRequiredHeader:
		pe.Errors = []problem.FieldError{{Field: "User-Agent", Code: problem.FieldRequired, Detail: "Send a User-Agent."}}
	}
	return pe
}

// mutateJSON decodes body, applies f and encodes it again.
func mutateJSON(t testing.TB, body []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("fixture is not a JSON object: %v", err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// byName finds the reply of the case named name.
func byName(cases []checkCase, name string) reply {
	for _, c := range cases {
		if c.name == name {
			return c.reply
		}
	}
	panic("no case " + name)
}

func withHeader(r reply, f func(h http.Header)) reply {
	h := r.header.Clone()
	f(h)
	r.header = h
	return r
}

func strPtr(s string) *string { return &s }

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
