// Package settingval is how the module's programs take their settings
// from the environment and flags: a program declares its table (Setting:
// each a variable with a flag over it), and each of its commands resolves
// the rows it reads (Line.Parse: a flag beats its variable, an empty
// variable is the default unless the row takes empty) and converts them
// with the readers here (durations, sizes, URLs of each form, paths,
// levels) or a package's own, every refused value reported at once and
// redacted (Parser, Read, Redact). An environment variable of the
// program's that no row names is refused with the setting it probably
// means (CheckEnviron); Kubernetes' service links are told apart
// (ServiceLink). The mechanism lives here, out of cmd/edge, so that the
// program holds only its table, the rules between its settings and the
// wiring (docs/architecture.md).
package settingval

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Duration reads a non-negative duration (30s, 5m).
func Duration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return d, errors.New("want a non-negative duration such as 30s or 5m")
	}
	return d, nil
}

// Float reads a finite non-negative number.
func Float(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return f, errors.New("want a non-negative number")
	}
	return f, nil
}

// Count reads a non-negative whole number.
func Count(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return n, errors.New("want a non-negative whole number")
	}
	return n, nil
}

// Bool reads true or false (and what strconv.ParseBool takes).
func Bool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return b, errors.New("want true or false")
	}
	return b, nil
}

// Level reads a log level: debug, info, warn or error.
func Level(v string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		return l, errors.New("want debug, info, warn or error")
	}
	return l, nil
}

// OneOf is the reader of one of allowed, the first when v is none of them.
func OneOf(allowed ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		if slices.Contains(allowed, v) {
			return v, nil
		}
		return allowed[0], errors.New("want one of " + strings.Join(allowed, ", "))
	}
}

// sizeUnits are the units a size takes after its number.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// Size reads a positive byte count: plain bytes (268435456) or a whole
// number with a unit (256MiB, 10MB, 2 GB).
func Size(v string) (int64, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(v)
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(v[i:]))]
	if err != nil || !ok || n <= 0 || n > math.MaxInt64/unit {
		return 0, errors.New("want a positive size in bytes, or with a unit such as 256MiB, 512KiB or 10MB")
	}
	return n * unit, nil
}

// absHTTP is v parsed as an absolute http or https URL; nil when it is not
// one (empty is not parsed).
func absHTTP(v string) *url.URL {
	if v == "" {
		return nil
	}
	if u, err := url.Parse(v); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return u
	}
	return nil
}

// URL reads empty (none) or an absolute http or https URL, without its
// trailing slashes.
func URL(v string) (string, error) {
	if v != "" && absHTTP(v) == nil {
		return strings.TrimRight(v, "/"), errors.New("want an absolute http or https URL")
	}
	return strings.TrimRight(v, "/"), nil
}

// BaseURL reads an optional base URL of a service (the PMS): URL, without
// query or fragment (the client appends its own paths and queries).
func BaseURL(v string) (string, error) {
	s, err := URL(v)
	if u := absHTTP(s); err == nil && u != nil && (u.RawQuery != "" || u.ForceQuery || u.Fragment != "") {
		return s, errors.New("want a base URL without query or fragment")
	}
	return s, err
}

// ExactURL reads empty or an absolute http(s) URL without query, fragment
// or credentials, kept exactly as given: an issuer is compared with iss
// character for character (a trailing slash included), an audience with
// aud.
func ExactURL(v string) (string, error) {
	if u := absHTTP(v); v != "" && (u == nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil) {
		return v, errors.New("want an absolute http or https URL without query or fragment")
	}
	return v, nil
}

// PublicURL reads empty or the absolute http(s) URL partners call, without
// query, fragment or credentials, nor /v1 at the end of its path (noV1); a
// trailing slash is dropped, as a path is appended to it.
func PublicURL(v string) (string, error) {
	if u := absHTTP(v); v != "" && (u == nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil) {
		return "", errors.New("want the absolute http or https URL partners call, without query or fragment")
	}
	return noV1(strings.TrimRight(v, "/"))
}

// DocsURL reads empty or the documentation site's base URL (URL), without
// /v1 at the end of its path (noV1).
func DocsURL(v string) (string, error) {
	s, err := URL(v)
	if err != nil {
		return s, err
	}
	return noV1(s)
}

// noV1 refuses a URL (without its trailing slashes) whose path ends in /v1
// (docs/contract.md section 22): the edge appends /v1 to the URL partners
// call and /errors/... to the docs URL, so https://host/v1 would make every
// problem type a dead /v1/docs/... link and the served OpenAPI document's
// server .../v1/v1. The error gives the URL to set instead.
func noV1(v string) (string, error) {
	if u := absHTTP(v); u != nil && (u.Path == "/v1" || strings.HasSuffix(u.Path, "/v1")) {
		return v, fmt.Errorf("want the URL without /v1, which the edge adds itself: %s", Redact(strings.TrimSuffix(v, "/v1")))
	}
	return v, nil
}

// DocsPath reads "off" or empty (no documentation site: "") or an
// absolute, clean path outside /v1 and /.well-known (and not "/" itself,
// which holds /v1), without its trailing slash.
func DocsPath(v string) (string, error) {
	if v == "" || v == "off" {
		return "", nil
	}
	v = strings.TrimRight(v, "/")
	switch {
	case !strings.HasPrefix(v, "/") || v == "" || path.Clean(v) != v:
		return v, errors.New("want an absolute path such as /docs")
	case v == "/v1" || strings.HasPrefix(v, "/v1/") || strings.HasPrefix(v, "/.well-known"):
		return v, errors.New("want a path outside /v1 and /.well-known")
	case strings.ContainsAny(v, "{}*%?#"):
		return v, errors.New("want a plain path: no {, }, *, %, ? or #")
	}
	return v, nil
}

// OffDuration reads a positive duration, or "off" (0).
func OffDuration(v string) (time.Duration, error) {
	if strings.EqualFold(strings.TrimSpace(v), "off") {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("want a positive duration such as 1s, or off")
	}
	return d, nil
}
