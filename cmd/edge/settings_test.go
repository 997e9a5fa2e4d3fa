package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// operations.md: an empty EDGE_ADMIN_ADDR disables the admin listener; an
// unset one means the default; "off" stays an alias of empty.
func TestAdminAddrEmptyDisables(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{env: nil, want: "127.0.0.1:9090"},
		{env: map[string]string{"EDGE_ADMIN_ADDR": ""}, want: ""},
		{env: map[string]string{"EDGE_ADMIN_ADDR": "off"}, want: ""},
		{env: map[string]string{"EDGE_ADMIN_ADDR": "127.0.0.1:9191"}, want: "127.0.0.1:9191"},
		// Other settings: an empty variable still means the default.
		{env: map[string]string{"EDGE_ADMIN_ADDR": "", "EDGE_ADDR": "", "EDGE_CACHE_TTL": ""}, want: ""},
	} {
		s, err := parseSettings(nil, mapEnv(tc.env), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if s.AdminAddr != tc.want {
			t.Errorf("%v: admin addr %q, want %q", tc.env, s.AdminAddr, tc.want)
		}
		if s.Addr != ":8080" || s.CacheTTL != 30*time.Second {
			t.Errorf("%v: empty EDGE_ADDR / EDGE_CACHE_TTL did not mean the default: %q %s", tc.env, s.Addr, s.CacheTTL)
		}
	}
}

// The defaults serve a PMS answering in 3 s (one attempt of 4 s) and fit
// the PMS call inside the request deadline; a shorter request deadline
// bounds the call.
func TestDeadlineDefaults(t *testing.T) {
	s, err := parseSettings(nil, mapEnv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.RequestTimeout != 10*time.Second || s.PMSAttempt <= 3*time.Second || s.PMSTimeout < s.PMSAttempt || s.PMSTimeout >= s.RequestTimeout {
		t.Errorf("defaults: request %s, PMS call %s, attempt %s", s.RequestTimeout, s.PMSTimeout, s.PMSAttempt)
	}
	if s.MaxConcurrent <= 0 {
		t.Errorf("default EDGE_MAX_CONCURRENT %d: the cap is off", s.MaxConcurrent)
	}
	s, err = parseSettings([]string{"--request-timeout", "3s"}, mapEnv(deployed(map[string]string{"EDGE_MAX_CONCURRENT": "0"})), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.PMSTimeout != 3*time.Second || s.MaxConcurrent != 0 {
		t.Errorf("request deadline 3s: PMS call %s, cap %d", s.PMSTimeout, s.MaxConcurrent)
	}
	for _, env := range []map[string]string{{"EDGE_REQUEST_TIMEOUT": "0s"}, {"EDGE_REQUEST_TIMEOUT": "soon"}, {"EDGE_MAX_CONCURRENT": "-1"}} {
		if _, err := parseSettings(nil, mapEnv(deployed(env)), io.Discard); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
}

// Every broken rule between settings is reported at once, not only the
// first: an operator fixes them in one round.
func TestSettingsReportEveryBrokenRule(t *testing.T) {
	env := mapEnv(map[string]string{
		"EDGE_TLS_CERT":        "cert.pem",         // without EDGE_TLS_KEY
		"EDGE_REQUEST_TIMEOUT": "0s",               // not positive
		"EDGE_OAUTH_ISSUER":    "https://id.test/", // without EDGE_OAUTH_AUDIENCE
		"EDGE_CACHE_TTL":       "10m",              // above EDGE_CACHE_STALE (5m)
	})
	_, err := parseSettings(nil, env, io.Discard)
	if err == nil {
		t.Fatal("broken rules accepted")
	}
	for _, want := range []string{"EDGE_TLS_CERT and EDGE_TLS_KEY", "EDGE_REQUEST_TIMEOUT must be positive",
		"EDGE_OAUTH_AUDIENCE is required", "EDGE_CACHE_STALE (5m0s) must be at least EDGE_CACHE_TTL (10m0s)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
}
