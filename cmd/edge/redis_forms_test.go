package main

import (
	"io"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
)

// docs/contract.md section 16: exactly one of three forms names the fleet's Redis; each
// is taken with its partner settings, and every mistake is a start-up
// error naming the settings, never showing a password.
func TestRedisFormSettings(t *testing.T) {
	const pw, spw = "pw-never-shown-1", "sentinel-pw-never-shown-2"
	withSecret := func(env map[string]string) map[string]string {
		env["EDGE_FLEET_SECRET"] = testFleetSecret
		return deployed(env)
	}
	for _, ok := range []struct {
		env  map[string]string
		form redisconn.Form
	}{
		{map[string]string{"EDGE_REDIS_URL": "rediss://redis.internal:6380/0"}, redisconn.FormPrimary},
		{map[string]string{"EDGE_REDIS_SENTINELS": "10.0.0.1:26379, 10.0.0.2:26379,10.0.0.3:26379", "EDGE_REDIS_MASTER": "mymaster",
			"EDGE_REDIS_SENTINEL_PASSWORD": spw, "EDGE_REDIS_USERNAME": "edge", "EDGE_REDIS_PASSWORD": pw, "EDGE_REDIS_TLS": "true"}, redisconn.FormSentinel},
		{map[string]string{"EDGE_REDIS_CLUSTER": "10.0.1.1:6379,10.0.1.2:6379", "EDGE_REDIS_TLS": "true",
			"EDGE_REDIS_CA_FILE": "/etc/redis/ca.pem", "EDGE_REDIS_CERT_FILE": "/etc/redis/c.pem", "EDGE_REDIS_KEY_FILE": "/etc/redis/k.pem"}, redisconn.FormCluster},
	} {
		s, err := parseSettings(nil, mapEnv(withSecret(ok.env)), io.Discard)
		if err != nil || s.Redis.Form() != ok.form {
			t.Errorf("%v: form %q, %v; want %q", ok.env, s.Redis.Form(), err, ok.form)
		}
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		named []string // settings the error names
	}{
		{"URL and Cluster", map[string]string{"EDGE_REDIS_URL": "redis://a:6379", "EDGE_REDIS_CLUSTER": "b:6379"},
			[]string{"EDGE_REDIS_URL", "EDGE_REDIS_CLUSTER", "exactly one"}},
		{"Sentinels and Cluster", map[string]string{"EDGE_REDIS_SENTINELS": "a:26379", "EDGE_REDIS_MASTER": "m", "EDGE_REDIS_CLUSTER": "b:6379"},
			[]string{"EDGE_REDIS_SENTINELS", "EDGE_REDIS_CLUSTER"}},
		{"Sentinels without master", map[string]string{"EDGE_REDIS_SENTINELS": "a:26379,b:26379", "EDGE_REDIS_PASSWORD": pw, "EDGE_REDIS_SENTINEL_PASSWORD": spw},
			[]string{"EDGE_REDIS_SENTINELS", "EDGE_REDIS_MASTER"}},
		{"master without Sentinels", map[string]string{"EDGE_REDIS_MASTER": "m"}, []string{"EDGE_REDIS_MASTER", "EDGE_REDIS_SENTINELS"}},
		{"host list in the URL", map[string]string{"EDGE_REDIS_URL": "redis://:" + pw + "@a:6379,b:6379/0"},
			[]string{"EDGE_REDIS_URL", "one primary", "EDGE_REDIS_CLUSTER", "xxxxx"}},
		{"comma-separated hosts before the port", map[string]string{"EDGE_REDIS_URL": "redis://a,b,c:6379/0"},
			[]string{"EDGE_REDIS_URL", "one primary"}},
		{"Sentinel without port", map[string]string{"EDGE_REDIS_SENTINELS": "a", "EDGE_REDIS_MASTER": "m"}, []string{"EDGE_REDIS_SENTINELS", "host:port"}},
		{"Cluster empty item", map[string]string{"EDGE_REDIS_CLUSTER": "a:1,,b:2"}, []string{"EDGE_REDIS_CLUSTER", "host:port"}},
		{"TLS not a bool", map[string]string{"EDGE_REDIS_CLUSTER": "a:1", "EDGE_REDIS_TLS": "yes please"}, []string{"EDGE_REDIS_TLS"}},
		{"certificate without key", map[string]string{"EDGE_REDIS_URL": "rediss://a:1", "EDGE_REDIS_CERT_FILE": "/c.pem"},
			[]string{"EDGE_REDIS_CERT_FILE", "EDGE_REDIS_KEY_FILE"}},
		{"CA without TLS", map[string]string{"EDGE_REDIS_CLUSTER": "a:1", "EDGE_REDIS_CA_FILE": "/ca.pem"}, []string{"EDGE_REDIS_CA_FILE", "EDGE_REDIS_TLS"}},
		{"credentials without Redis", map[string]string{"EDGE_REDIS_PASSWORD": pw}, []string{"EDGE_REDIS_PASSWORD"}},
	} {
		_, err := parseSettings(nil, mapEnv(withSecret(tc.env)), io.Discard)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		for _, want := range tc.named {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q does not name %s", tc.name, msg, want)
			}
		}
		if strings.Contains(msg, pw) || strings.Contains(msg, spw) {
			t.Errorf("%s: error %q shows a password", tc.name, msg)
		}
	}
	// Every form needs EDGE_FLEET_SECRET (docs/contract.md section 15).
	for setting, env := range map[string]map[string]string{
		"EDGE_REDIS_URL":       {"EDGE_REDIS_URL": "redis://a:6379"},
		"EDGE_REDIS_SENTINELS": {"EDGE_REDIS_SENTINELS": "a:26379", "EDGE_REDIS_MASTER": "m", "EDGE_REDIS_PASSWORD": pw},
		"EDGE_REDIS_CLUSTER":   {"EDGE_REDIS_CLUSTER": "a:6379"},
	} {
		_, err := parseSettings(nil, mapEnv(env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "EDGE_FLEET_SECRET is required when "+setting) || strings.Contains(err.Error(), pw) {
			t.Errorf("%s without EDGE_FLEET_SECRET: %v", setting, err)
		}
	}
}
