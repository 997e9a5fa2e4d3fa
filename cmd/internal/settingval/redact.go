package settingval

import (
	"regexp"
	"strings"
)

// redacted is how a hidden secret is shown.
const redacted = "xxxxx"

// credentialQuery matches a query parameter whose name looks like a
// credential (token, key, secret, password, signature...) and its value.
var credentialQuery = regexp.MustCompile(`(?i)([?&;][^=&;#]*(?:token|key|secret|passw|pwd|pass|auth|sig|credential|session|cookie)[^=&;#]*=)([^&;#]*)`)

// Redact is value as a start-up error may print it (docs/contract.md section 15):
// a URL's password (or a userinfo without one: a token before the @) and
// the values of query parameters that look like credentials become xxxxx.
// It works on the raw text, so a URL that does not parse is redacted too;
// values that are not URLs come back unchanged.
func Redact(value string) string {
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

// secretFlag matches the names of the flags whose values are secrets:
// --pms-token, --pms-candidate-token, --fleet-secret, and any later flag
// named for a token, secret or password.
var secretFlag = regexp.MustCompile(`(?i)token|secret|passw`)

// RedactArgs is the command line as /debug/pprof/cmdline shows it
// (docs/contract.md section 17): the value of every secret flag, as
// --flag=value or --flag value, becomes xxxxx, and every other argument is
// redacted as a setting is (a URL's password, credential-like query
// parameters). args is not modified.
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out[i] = Redact(a)
		if i == 0 || !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !secretFlag.MatchString(name) {
			continue
		}
		if hasValue {
			out[i] = a[:strings.IndexByte(a, '=')+1] + redacted
		} else if i+1 < len(args) {
			i++
			out[i] = redacted
		}
	}
	return out
}
