package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/partner-edge/partner-edge/problem"
)

// MaxBody is the most a request body may hold (docs/contract.md section
// 26): 16 KiB. Past it, 413 PAYLOAD_TOO_LARGE, and nothing more is read.
const MaxBody = 16 << 10

// readJSONBody reads the request's JSON object for a route that takes the
// members fields, checked in the contract's order (docs/contract.md section
// 26): Content-Type (415), size (413, read no further), JSON (400
// MALFORMED_JSON: not one UTF-8 JSON object, trailing data, a name given
// twice at any depth), then names (400 UNKNOWN_BODY_FIELD, every unknown
// one listed, another casing of a known one named). It returns the members
// by name, their values raw: the route checks them (422).
func readJSONBody(w http.ResponseWriter, r *http.Request, fields []string) (map[string]json.RawMessage, error) {
	if err := checkContentType(r.Header["Content-Type"]); err != nil {
		return nil, err
	}
	if r.ContentLength > MaxBody {
		return nil, tooLarge()
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	switch {
	case len(b) > MaxBody:
		return nil, tooLarge()
	case err != nil:
		return nil, &problem.Error{Code: problem.MalformedJSON, Err: err,
			Detail: "The request body could not be read to its end."}
	}
	// Read to its end within the limit: the connection may serve the next
	// request (closeOnBody).
	stateFrom(r.Context()).bodyRead = true
	delete(w.Header(), "Connection")
	if err := checkJSON(b); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil { // checkJSON let it through: cannot fail
		return nil, malformed("The request body must be one JSON object.", err)
	}
	var unknown []problem.FieldError
	for _, name := range memberNames(b) {
		if slices.Contains(fields, name) {
			continue
		}
		fe := problem.FieldError{Field: problem.Clip(name, maxEchoedParam), Code: problem.FieldUnknownField,
			Detail: "This endpoint takes no member of this name."}
		for _, f := range fields {
			if strings.EqualFold(f, name) {
				fe.Detail = "Names are case-sensitive: did you mean " + f + "?"
			}
		}
		unknown = append(unknown, fe)
	}
	if unknown != nil {
		return nil, &problem.Error{Code: problem.UnknownBodyField, Errors: unknown,
			Detail: "The request body holds members this endpoint does not take: it takes " + strings.Join(fields, " and ") + "."}
	}
	return members, nil
}

// checkContentType allows application/json, with at most a charset
// parameter of utf-8 (any casing); the header sent once.
func checkContentType(vs []string) error {
	if len(vs) == 1 {
		mt, params, err := mime.ParseMediaType(vs[0])
		cs, hasCharset := params["charset"]
		if err == nil && mt == "application/json" && len(params) <= 1 &&
			(len(params) == 0 || hasCharset && strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	return problem.New(problem.UnsupportedMediaType,
		"Send the request body as JSON with Content-Type: application/json (a charset parameter may only be utf-8).")
}

func tooLarge() error {
	return problem.New(problem.PayloadTooLarge, "The request body is larger than 16 KiB (16384 bytes).")
}

func malformed(detail string, err error) error {
	return &problem.Error{Code: problem.MalformedJSON, Detail: detail, Err: err}
}

// checkJSON accepts b when it is valid UTF-8 holding exactly one JSON
// object whose objects, at every depth, name each member once.
func checkJSON(b []byte) error {
	if !utf8.Valid(b) {
		return malformed("The request body is not valid UTF-8.", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return malformed("The request body is not JSON.", err)
	}
	if tok != json.Delim('{') {
		return malformed("The request body must be one JSON object.", nil)
	}
	// names holds, per open container, the member names seen (nil for an
	// array); expectName is true where the next token of an object is a name.
	names := []map[string]bool{{}}
	expectName := true
	for len(names) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return malformed("The request body is not JSON.", err)
		}
		top := names[len(names)-1]
		if top != nil && expectName {
			if tok == json.Delim('}') {
				names = names[:len(names)-1]
				expectName = len(names) > 0 && names[len(names)-1] != nil
				continue
			}
			name := tok.(string) // the decoder allows only a string or '}' here
			if top[name] {
				return malformed("The request body names the member "+problem.Clip(name, maxEchoedParam)+" twice.", nil)
			}
			top[name] = true
			expectName = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			names, expectName = append(names, map[string]bool{}), true
		case json.Delim('['):
			names, expectName = append(names, nil), false
		case json.Delim(']'):
			names = names[:len(names)-1]
			expectName = len(names) > 0 && names[len(names)-1] != nil
		default: // a value: in an object, a name comes next
			expectName = top != nil
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return malformed("The request body has data after its JSON object.", err)
	}
	return nil
}

// memberNames are the names of b's top-level members in their order (b
// passed checkJSON).
func memberNames(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	_, _ = dec.Token() // '{'
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return out
		}
	}
	return out
}
