package main

import (
	"io"
	"strings"
	"testing"
)

// EDGE_AUTH_FAIL_LIMIT and EDGE_TRUSTED_PROXIES: defaults, values, and
// malformed values named with the variable and the value.
func TestLimitSettings(t *testing.T) {
	env := func(m map[string]string) lookupEnv { return mapEnv(deployed(m)) }
	s, err := parseSettings(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.AuthFailLimit != 20 || len(s.TrustedProxies) != 0 {
		t.Errorf("defaults: %d, %v", s.AuthFailLimit, s.TrustedProxies)
	}
	s, err = parseSettings([]string{"--auth-fail-limit", "0"}, env(map[string]string{"EDGE_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if s.AuthFailLimit != 0 || len(s.TrustedProxies) != 2 || s.TrustedProxies[1].String() != "192.0.2.1/32" {
		t.Errorf("set: %d, %v", s.AuthFailLimit, s.TrustedProxies)
	}
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"EDGE_AUTH_FAIL_LIMIT": "many"}, []string{"EDGE_AUTH_FAIL_LIMIT", `"many"`}},
		{map[string]string{"EDGE_AUTH_FAIL_LIMIT": "-1"}, []string{"EDGE_AUTH_FAIL_LIMIT", `"-1"`}},
		{map[string]string{"EDGE_TRUSTED_PROXIES": "10.0.0.0/8,lb.internal"}, []string{"EDGE_TRUSTED_PROXIES", "10.0.0.0/8,lb.internal", "lb.internal"}},
		{map[string]string{"EDGE_TRUSTED_PROXIES": "10.0.0.0/40"}, []string{"EDGE_TRUSTED_PROXIES", "10.0.0.0/40"}},
	} {
		_, err := parseSettings(nil, env(tc.env), io.Discard)
		if err == nil {
			t.Errorf("%v: no error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.env, err, w)
			}
		}
	}
}
