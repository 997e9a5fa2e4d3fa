package main

import (
	"io"
	"strings"
	"testing"
)

// testFleetSecret is an EDGE_FLEET_SECRET for tests (32 bytes).
const testFleetSecret = "test-fleet-secret-of-32-bytes-ok"

// EDGE_REDIS_URL: empty is in-process; redis:// and rediss:// are taken;
// anything else is a start-up error naming the variable and the value,
// with a password hidden.
func TestRedisURLSetting(t *testing.T) {
	s, err := parseSettings(nil, mapEnv(nil), io.Discard)
	if err != nil || s.Redis.URL != "" {
		t.Fatalf("default: %q, %v; want empty", s.Redis.URL, err)
	}
	for _, ok := range []string{"redis://127.0.0.1:6379/0", "rediss://user:pw@redis.internal:6380/2", "redis://localhost"} {
		s, err := parseSettings(nil, mapEnv(deployed(map[string]string{"EDGE_REDIS_URL": ok, "EDGE_FLEET_SECRET": testFleetSecret})), io.Discard)
		if err != nil || s.Redis.URL != ok {
			t.Errorf("%s: %q, %v", ok, s.Redis.URL, err)
		}
	}
	for _, tc := range []struct{ value, shown, hidden string }{
		{"localhost:6379", `"localhost:6379"`, ""},
		{"http://redis:6379", `"http://redis:6379"`, ""},
		{"redis://redis:6379/notanumber", `"redis://redis:6379/notanumber"`, ""},
		{"redis://:s3cret@redis:6379/x", "redis://:xxxxx@redis:6379/x", "s3cret"},
		{"redis//:s3cret@redis", "xxxxx@redis", "s3cret"},
	} {
		_, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_REDIS_URL": tc.value}), io.Discard)
		if err == nil {
			t.Errorf("%s: no error", tc.value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "EDGE_REDIS_URL") || !strings.Contains(msg, tc.shown) ||
			(tc.hidden != "" && strings.Contains(msg, tc.hidden)) {
			t.Errorf("%s: error %q; want EDGE_REDIS_URL and %s named, no password", tc.value, msg, tc.shown)
		}
	}
	s, err = parseSettings([]string{"--redis-url", "redis://10.0.0.5:6379/1"}, mapEnv(deployed(map[string]string{"EDGE_FLEET_SECRET": testFleetSecret})), io.Discard)
	if err != nil || s.Redis.URL != "redis://10.0.0.5:6379/1" {
		t.Errorf("flag: %q, %v", s.Redis.URL, err)
	}
}
