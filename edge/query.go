package edge

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/partner-edge/partner-edge/problem"
)

// intParam is a query parameter of a route's allow-list: an integer
// between min and max (def when absent), or, with valid set, a string
// (after on /v1/events) that valid accepts: a string it refuses is out of
// range (422, INVALID_FORMAT: docs/contract.md section 23), not malformed.
type intParam struct {
	name          string
	def, min, max int64
	valid         func(string) bool
	invalid       string // the detail of a value valid refuses
}

// listParams is the allow-list of GET /v1/properties for the feed whose
// list cursors validAsOf accepts (asOf: docs/contract.md section 25).
func listParams(validAsOf func(string) bool) []intParam {
	return []intParam{
		{name: "page", def: 1, min: 1, max: 2147483647},
		{name: "perPage", def: 50, min: 1, max: 100},
		{name: "asOf", valid: validAsOf, invalid: unknownAsOfDetail},
	}
}

// eventsParams is the allow-list of GET /v1/events for the feed whose
// cursors valid accepts.
func eventsParams(valid func(string) bool) []intParam {
	return []intParam{
		{name: "after", valid: valid, invalid: unknownCursorDetail},
		{name: "limit", def: 50, min: 1, max: 100},
	}
}

// maxParams bounds a route's allow-list, so parsing needs no allocation.
const maxParams = 3

// queryValues are the values of a route's params, in allow-list order:
// n of integers, text of strings, given whether the query held it.
type queryValues struct {
	n     [maxParams]int64
	text  [maxParams]string
	given [maxParams]bool
}

// parseQuery validates raw against the allow-list params (at most
// maxParams) and returns the value of each param (its default when absent),
// checked in the order of docs/contract.md section 5; every problem of the
// first failing class is listed (problem.MaxErrors at most, with their
// total). Linear in len(raw); a well-formed query allocates nothing.
func parseQuery(raw string, params []intParam) (queryValues, error) {
	var vals queryValues
	for i, p := range params {
		vals.n[i] = p.def
	}
	if raw == "" {
		return vals, nil
	}
	if strings.IndexByte(raw, ';') >= 0 {
		return vals, problem.New(problem.MalformedQueryString, "The query string cannot contain ';'. Separate parameters with '&'.")
	}
	var count [maxParams]int
	var given [maxParams]string // the first value of each param
	var unknown unknownNames
	// IndexByte rather than strings.Cut: on a 64 KB query of unknown
	// names Cut's extra call costs about 10% (BenchmarkUnknownQuery64KB).
	for rest := raw; rest != ""; {
		var pair string
		if i := strings.IndexByte(rest, '&'); i >= 0 {
			pair, rest = rest[:i], rest[i+1:]
		} else {
			pair, rest = rest, ""
		}
		if pair == "" {
			continue
		}
		rawName, rawValue := pair, ""
		if i := strings.IndexByte(pair, '='); i >= 0 {
			rawName, rawValue = pair[:i], pair[i+1:]
		}
		name, ok := queryUnescape(rawName)
		if !ok {
			return vals, malformedEscape()
		}
		i := slices.IndexFunc(params, func(p intParam) bool { return p.name == name })
		if i < 0 {
			// An unknown name's value is only checked, never decoded.
			if !validEscapes(rawValue) {
				return vals, malformedEscape()
			}
			unknown.add(name, params)
			continue
		}
		value, ok := queryUnescape(rawValue)
		if !ok {
			return vals, malformedEscape()
		}
		if count[i]++; count[i] == 1 {
			given[i] = value
		}
	}
	if unknown.total > 0 {
		return vals, &problem.Error{Code: problem.UnknownQueryParameter,
			Detail: "The query string names parameters this endpoint does not accept.", Errors: unknown.listed, Total: unknown.total}
	}
	var malformed, outOfRange []problem.FieldError
	for i, p := range params {
		switch {
		case count[i] == 0:
			continue
		case count[i] > 1:
			malformed = append(malformed, problem.FieldError{Field: p.name, Code: problem.FieldInvalidFormat,
				Detail: fmt.Sprintf("%s was given %d times; give it once.", p.name, count[i])})
			continue
		case p.valid != nil:
			if !p.valid(given[i]) {
				outOfRange = append(outOfRange, problem.FieldError{Field: p.name, Code: problem.FieldInvalidFormat, Detail: p.invalid})
				continue
			}
			vals.text[i], vals.given[i] = given[i], true
			continue
		case !decimal(given[i]):
			malformed = append(malformed, problem.FieldError{Field: p.name, Code: problem.FieldInvalidFormat,
				Detail: p.name + " must be a plain decimal integer."})
			continue
		}
		n, err := strconv.ParseInt(given[i], 10, 64)
		if err != nil || n < p.min || n > p.max {
			outOfRange = append(outOfRange, problem.FieldError{Field: p.name, Code: problem.FieldOutOfRange,
				Detail: fmt.Sprintf("%s must be between %d and %d.", p.name, p.min, p.max)})
			continue
		}
		vals.n[i], vals.given[i] = n, true
	}
	switch {
	case malformed != nil:
		return vals, &problem.Error{Code: problem.InvalidQueryParameter,
			Detail: "One or more query parameters are malformed.", Errors: malformed}
	case outOfRange != nil:
		return vals, &problem.Error{Code: problem.ValidationFailed,
			Detail: "One or more query parameters are out of range.", Errors: outOfRange}
	}
	return vals, nil
}

// malformedEscape answers a query with a '%' not followed by two hex digits.
func malformedEscape() error {
	return problem.New(problem.MalformedQueryString, "The query string has an invalid percent-encoding.")
}

// queryUnescape is url.QueryUnescape without its scan of names and values
// that hold neither '%' nor '+', the common case the hot loop meets
// thousands of times in a hostile query.
func queryUnescape(s string) (string, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '%' || c == '+' {
			u, err := url.QueryUnescape(s)
			return u, err == nil
		}
	}
	return s, true
}

// validEscapes reports whether every '%' in s starts a two-hex-digit
// escape, as url.QueryUnescape requires, without decoding s.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; i = strings.IndexByte(s, '%') {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		s = s[i+3:]
	}
	return true
}

// unknownNames collects the distinct unknown names of a query: the first
// problem.MaxErrors as entries, and the count of all. Only listed names are
// de-duplicated (more would need a set as large as the query): the total
// counts a repeat of an unlisted name each time.
type unknownNames struct {
	listed []problem.FieldError
	total  int
	seen   map[string]struct{} // the listed names
}

func (u *unknownNames) add(name string, params []intParam) {
	if _, dup := u.seen[name]; dup {
		return
	}
	u.total++
	if len(u.listed) < problem.MaxErrors {
		if u.seen == nil {
			u.seen = make(map[string]struct{}, problem.MaxErrors)
		}
		u.seen[name] = struct{}{}
		u.listed = append(u.listed, unknownParam(name, params))
	}
}

// maxEchoedName bounds how much of a partner's parameter name the detail
// quotes; the entry's field carries the name, clipped by the writer.
const maxEchoedName = 40

// unknownParam explains an unknown name, suggesting the allowed name it
// resembles when it differs only in case, '_' or '-' (per_page -> perPage).
func unknownParam(name string, params []intParam) problem.FieldError {
	fe := problem.FieldError{Field: name, Code: problem.FieldUnknownParameter}
	folded := fold(name)
	name = problem.Clip(name, maxEchoedName)
	for _, p := range params {
		if folded == fold(p.name) {
			fe.Detail = fmt.Sprintf("Unknown query parameter %q. Did you mean %q? Names are case-sensitive.", name, p.name)
			return fe
		}
	}
	if len(params) == 0 {
		fe.Detail = fmt.Sprintf("Unknown query parameter %q. This endpoint takes no query parameters.", name)
		return fe
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	fe.Detail = fmt.Sprintf("Unknown query parameter %q. Allowed: %s.", name, strings.Join(names, ", "))
	return fe
}

// fold is s in lower case without '_' and '-'.
func fold(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '_' || c == '-':
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// decimal reports whether s is a plain decimal integer: digits only, no
// sign, space, point or prefix.
func decimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
