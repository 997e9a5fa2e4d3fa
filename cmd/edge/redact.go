package main

import (
	"regexp"
	"strings"
)

// redacted is how a hidden secret is shown.
const redacted = "xxxxx"

// credentialQuery matches a query parameter whose name looks like a
// credential (token, key, secret, password, signature...) and its value.
var credentialQuery = regexp.MustCompile(`(?i)([?&;][^=&;#]*(?:token|key|secret|passw|pwd|pass|auth|sig|credential|session|cookie)[^=&;#]*=)([^&;#]*)`)

// redactSetting is value as a start-up error may print it (DECISIONS 15):
// a URL's password (or a userinfo without one: a token before the @) and
// the values of query parameters that look like credentials become xxxxx.
// It works on the raw text, so a URL that does not parse is redacted too;
// values that are not URLs come back unchanged.
func redactSetting(value string) string {
	v := value
	start := 0
	if i := strings.Index(v, "://"); i >= 0 {
		start = i + 3
	}
	authority := v[start:]
	if end := strings.IndexAny(authority, "?#"); end >= 0 {
		authority = authority[:end]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo := authority[:at]
		shown := redacted
		if colon := strings.IndexByte(userinfo, ':'); colon >= 0 {
			shown = userinfo[:colon+1] + redacted
		}
		v = v[:start] + shown + v[start+at:]
	}
	return credentialQuery.ReplaceAllString(v, "${1}"+redacted)
}
