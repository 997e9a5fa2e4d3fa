package edge

import (
	"encoding/json"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/partner-edge/partner-edge/problem"
)

// The bounds of a webhook endpoint's members (docs/contract.md section 26).
const (
	maxEndpointURL         = 2048
	maxEndpointDescription = 200
)

// endpointInput is a create request's values, checked.
type endpointInput struct {
	url, description string
}

// endpointInput checks the members of a create request (readJSONBody let
// them through): 422 VALIDATION_FAILED listing every invalid one. url is
// required, an absolute https URL (http too when the operator allows it),
// at most 2,048 characters, without user info or fragment; description is
// optional (null: absent), at most 200 characters, no control characters.
func (d webhookDeps) endpointInput(members map[string]json.RawMessage) (endpointInput, error) {
	var in endpointInput
	var errs []problem.FieldError
	u, present, ok := jsonString(members["url"])
	switch {
	case !present || ok && u == "":
		errs = append(errs, problem.FieldError{Field: "url", Code: problem.FieldRequired,
			Detail: "url is required: the https URL deliveries are POSTed to."})
	case !ok:
		errs = append(errs, problem.FieldError{Field: "url", Code: problem.FieldInvalidFormat,
			Detail: "url must be a string."})
	case utf8.RuneCountInString(u) > maxEndpointURL:
		errs = append(errs, problem.FieldError{Field: "url", Code: problem.FieldTooLong,
			Detail: "url must be at most " + strconv.Itoa(maxEndpointURL) + " characters."})
	default:
		if detail := d.checkEndpointURL(u); detail != "" {
			errs = append(errs, problem.FieldError{Field: "url", Code: problem.FieldInvalidFormat, Detail: detail})
		}
		in.url = u
	}
	desc, present, ok := jsonString(members["description"])
	switch {
	case !present:
	case !ok:
		errs = append(errs, problem.FieldError{Field: "description", Code: problem.FieldInvalidFormat,
			Detail: "description must be a string or null."})
	case utf8.RuneCountInString(desc) > maxEndpointDescription:
		errs = append(errs, problem.FieldError{Field: "description", Code: problem.FieldTooLong,
			Detail: "description must be at most " + strconv.Itoa(maxEndpointDescription) + " characters."})
	case hasControl(desc):
		errs = append(errs, problem.FieldError{Field: "description", Code: problem.FieldInvalidFormat,
			Detail: "description must hold no control characters."})
	default:
		in.description = desc
	}
	if errs != nil {
		return endpointInput{}, &problem.Error{Code: problem.ValidationFailed, Errors: errs,
			Detail: "One or more members of the request body are invalid."}
	}
	return in, nil
}

// jsonString reads raw as a JSON string: present is false for an absent
// member or null, ok false for another type.
func jsonString(raw json.RawMessage) (s string, present, ok bool) {
	if raw == nil || string(raw) == "null" {
		return "", false, false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, false
	}
	return s, true, true
}

// checkEndpointURL is "" for a URL deliveries may go to, else why not. The
// address it names is checked when delivering, on every attempt
// (docs/webhooks.md, "No delivery reaches inside"), not here: a name's
// addresses change.
func (d webhookDeps) checkEndpointURL(raw string) string {
	const absolute = "url must be an absolute https URL, such as https://example.com/webhooks."
	for i := 0; i < len(raw); i++ {
		if raw[i] <= 0x20 || raw[i] >= 0x7f {
			return "url must be printable ASCII without spaces: percent-encode other characters and give an internationalised host name in its ASCII (xn--) form."
		}
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] == '#' {
			return "url must have no fragment (#...)."
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Hostname() == "" {
		return absolute
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && d.allowHTTP:
	case u.Scheme == "http":
		return "url must use https: this deployment does not deliver to http URLs."
	default:
		return absolute
	}
	if u.User != nil {
		return "url must carry no user info (user:password@): put a credential in the path or query if the receiver needs one."
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "url has an invalid port."
		}
	}
	return ""
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return true
		}
	}
	return false
}
