package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
)

// The closest known setting of a misspelt one: a longer or shorter form of
// it first, else the nearest by edits (a swap counted as one), else none.
func TestClosestSetting(t *testing.T) {
	names := make([]string, 0)
	for k := range knownEnv() {
		names = append(names, k)
	}
	slices.Sort(names)
	for unknown, want := range map[string]string{
		"EDGE_TLS_CERT_FILE":   "EDGE_TLS_CERT",
		"EDGE_TLS_KEY_FILE":    "EDGE_TLS_KEY",
		"PMS_BASEURL":          "PMS_BASE_URL",
		"PMS_BASE":             "PMS_BASE_URL",
		"EDGE_REDIS_ULR":       "EDGE_REDIS_URL",
		"EDGE_KEY_FILE":        "EDGE_KEYS_FILE",
		"EDGE_RATELIMIT":       "EDGE_RATE_LIMIT",
		"EDGE_PUBLIC_URL_BASE": "EDGE_PUBLIC_URL",
		"EDGE_FROBNICATE":      "",
		"PMS_X":                "",
	} {
		if got := settingval.Closest(unknown, names); got != want {
			t.Errorf("closest(%s) = %q, want %q", unknown, got, want)
		}
	}
}

// checkEnviron passes every setting of the table and every variable that
// is not EDGE_* or PMS_*, and names each unknown one.
func TestCheckEnviron(t *testing.T) {
	var env []string
	for k := range knownEnv() {
		env = append(env, k+"=v")
	}
	env = append(env, "PATH=/bin", "OTEL_SERVICE_NAME=x", "EDGEX=1", "PMSX=1", "HOME=/root")
	if err := checkEnviron(env); err != nil {
		t.Fatalf("known environment refused: %v", err)
	}
	err := checkEnviron(append(env, "EDGE_TLS_CERT_FILE=x", "PMS_=1"))
	if err == nil || !strings.Contains(err.Error(), "EDGE_TLS_CERT_FILE: did you mean EDGE_TLS_CERT?") ||
		!strings.Contains(err.Error(), "unknown setting PMS_:") {
		t.Fatalf("got %v", err)
	}
}

// knownEnv are the variables of settingTable.
func knownEnv() map[string]bool {
	known := map[string]bool{}
	for _, st := range settingTable() {
		known[st.Env] = true
	}
	return known
}
