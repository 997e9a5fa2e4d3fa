package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
)

// docs/contract.md section 15: a start-up error echoes a setting's
// value with a URL's password, and query values that look like
// credentials, shown as xxxxx; an unparseable URL included.
func TestStartupErrorsRedactSecrets(t *testing.T) {
	keysFile, _ := keystest.Live(t, "aurora")
	for _, tc := range []struct {
		env    map[string]string
		secret string
		want   []string
	}{
		{map[string]string{"PMS_BASE_URL": "http://admin:S3CRETPW@[::1"}, "S3CRETPW", []string{"PMS_BASE_URL", "xxxxx"}},
		{map[string]string{"PMS_BASE_URL": "ftp://admin:S3CRETPW@pms:9000/"}, "S3CRETPW", []string{"PMS_BASE_URL", "admin:xxxxx@pms"}},
		{map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_BRAND": "aurora", "EDGE_KEYS_FILE": "/k.json",
			"PMS_SANDBOX_URL": "pms-sandbox/?access_token=S3CRETQV&region=eu"}, "S3CRETQV", []string{"PMS_SANDBOX_URL", "access_token=xxxxx", "region=eu"}},
		{map[string]string{"EDGE_DOCS_URL": "developer.example.com/?api_key=S3CRETQV"}, "S3CRETQV", []string{"EDGE_DOCS_URL", "api_key=xxxxx"}},
		{map[string]string{"EDGE_REDIS_URL": "redis://:S3CRETPW@[::1"}, "S3CRETPW", []string{"EDGE_REDIS_URL", "xxxxx"}},
		// Parses, but the PMS client takes no query: refused naming the
		// setting, the password and the token hidden.
		{map[string]string{"PMS_BASE_URL": "http://admin:S3CRETPW@pms:9000/?api_token=S3CRETQV", "EDGE_BRAND": "aurora", "EDGE_KEYS_FILE": keysFile, "EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": ""},
			"S3CRET", []string{"PMS_BASE_URL", "admin:xxxxx@pms", "api_token=xxxxx"}},
	} {
		err := run(context.Background(), []string{"edge"}, mapEnv(tc.env), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v: no error", tc.env)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, tc.secret) {
			t.Errorf("%v: the error prints the secret: %s", tc.env, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: error %q does not show %s", tc.env, msg, w)
			}
		}
	}
}

// docs/contract.md section 15: a rate the limiter cannot represent
// is a start-up error naming the setting, never "no limit".
func TestUnrepresentableRateRefused(t *testing.T) {
	for _, v := range []string{"1e-9", "1e-12", "2e6"} {
		_, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_RATE_LIMIT": v})), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "EDGE_RATE_LIMIT") || !strings.Contains(err.Error(), v) {
			t.Errorf("EDGE_RATE_LIMIT=%s: %v; want an error naming the setting and the value", v, err)
		}
	}
	// With a larger burst the bucket needs longer to refill: the smallest
	// rate grows with the burst.
	_, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_RATE_LIMIT": "1e-6", "EDGE_RATE_BURST": "100000000"})), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_RATE_LIMIT") {
		t.Errorf("1e-6 with burst 1e8: %v; want refused", err)
	}
	for _, v := range []string{"0", "0.001", "1", "1000000"} {
		s, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_RATE_LIMIT": v})), io.Discard)
		if err != nil {
			t.Errorf("EDGE_RATE_LIMIT=%s: %v", v, err)
		}
		_ = s
	}
}

// docs/contract.md section 15: trusted-proxy ranges shorter than /8
// (IPv4) or /16 (IPv6) are refused, naming the setting.
func TestTrustedProxiesTooWideRefused(t *testing.T) {
	for _, v := range []string{"0.0.0.0/0,::/0", "0.0.0.0/0", "::/0", "10.0.0.0/7", "2001::/15", "::ffff:0.0.0.0/96"} {
		_, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_TRUSTED_PROXIES": v})), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "EDGE_TRUSTED_PROXIES") {
			t.Errorf("EDGE_TRUSTED_PROXIES=%s: %v; want refused naming the setting", v, err)
		}
	}
	for _, v := range []string{"10.0.0.0/8", "2001:db8::/16", "192.0.2.1", "::1"} {
		if _, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_TRUSTED_PROXIES": v})), io.Discard); err != nil {
			t.Errorf("EDGE_TRUSTED_PROXIES=%s: %v", v, err)
		}
	}
}

// docs/contract.md section 15: with EDGE_REDIS_URL, EDGE_FLEET_SECRET
// of at least 32 bytes is required; the error names the variable and never
// prints the secret.
func TestFleetSecretRequired(t *testing.T) {
	redisURL := map[string]string{"EDGE_REDIS_URL": "redis://127.0.0.1:6379/0"}
	_, err := parseSettings(nil, mapEnv(deployed(redisURL)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_FLEET_SECRET") {
		t.Errorf("no secret: %v; want an error naming EDGE_FLEET_SECRET", err)
	}
	short := map[string]string{"EDGE_REDIS_URL": "redis://127.0.0.1:6379/0", "EDGE_FLEET_SECRET": "only-twenty-six-bytes-long"}
	_, err = parseSettings(nil, mapEnv(deployed(short)), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_FLEET_SECRET") || strings.Contains(err.Error(), "only-twenty-six") {
		t.Errorf("short secret: %v; want an error naming EDGE_FLEET_SECRET without its value", err)
	}
	ok := map[string]string{"EDGE_REDIS_URL": "redis://127.0.0.1:6379/0", "EDGE_FLEET_SECRET": strings.Repeat("k", 32)}
	s, err := parseSettings(nil, mapEnv(deployed(ok)), io.Discard)
	if err != nil || string(s.FleetSecret) != strings.Repeat("k", 32) {
		t.Errorf("32-byte secret: %q, %v", s.FleetSecret, err)
	}
	// Without Redis the secret is optional.
	if _, err := parseSettings(nil, mapEnv(nil), io.Discard); err != nil {
		t.Errorf("no Redis, no secret: %v", err)
	}
}

// docs/contract.md section 15: EDGE_PMS_MAX_WALK_BYTES, default
// 256MiB, in bytes or with a unit.
func TestMaxWalkBytesSetting(t *testing.T) {
	s, err := parseSettings(nil, mapEnv(nil), io.Discard)
	if err != nil || s.PMSMaxWalkBytes != 256<<20 {
		t.Fatalf("default: %d, %v; want 256 MiB", s.PMSMaxWalkBytes, err)
	}
	for v, want := range map[string]int64{"1000": 1000, "64MiB": 64 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "10MB": 10_000_000, "2 GB": 2_000_000_000} {
		s, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_PMS_MAX_WALK_BYTES": v})), io.Discard)
		if err != nil || s.PMSMaxWalkBytes != want {
			t.Errorf("%s: %d, %v; want %d", v, s.PMSMaxWalkBytes, err, want)
		}
	}
	for _, v := range []string{"lots", "-1", "0", "12XB", "1e3", "99999999999999999999"} {
		_, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_PMS_MAX_WALK_BYTES": v})), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "EDGE_PMS_MAX_WALK_BYTES") || !strings.Contains(err.Error(), v) {
			t.Errorf("%s: %v; want an error naming the setting and value", v, err)
		}
	}
}
