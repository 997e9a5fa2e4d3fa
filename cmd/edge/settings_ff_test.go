package main

import (
	"flag"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/cmd/internal/settingval"

	"github.com/peterbourgon/ff/v3"
)

// The library beside resolve (docs/architecture.md, "What we own, and
// why"): github.com/peterbourgon/ff/v3 reads the settings from flags over
// the process's environment, and the same readers and rules convert them
// (edgeSettings). What ff cannot say, it is given here: it names a
// flag's variable after the flag, so every flag is renamed after its
// variable (--edge-addr for --addr); it reads os.Getenv only (run takes its
// environment as a lookup), takes an empty variable as unset (EDGE_ADMIN_ADDR=
// turns the admin listener off) and does not tell a flag from a variable
// (errors name the one given).
func parseSettingsFF(args []string) (settings, error) {
	fs := flag.NewFlagSet("edge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	vals := map[string]*string{}
	for _, st := range settingTable() {
		vals[st.Env] = fs.String(ffFlag(st.Env), st.Def, st.Help)
	}
	if err := ff.Parse(fs, args, ff.WithEnvVars()); err != nil {
		return settings{}, err
	}
	got := map[string]settingval.Got{}
	for env, v := range vals {
		got[env] = settingval.Got{Value: *v, Source: env}
	}
	fs.Visit(func(f *flag.Flag) {
		env := strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		got[env] = settingval.Got{Value: got[env].Value, Source: env, Set: true}
	})
	return edgeSettings(settingval.NewParser(got))
}

func ffFlag(env string) string { return strings.ToLower(strings.ReplaceAll(env, "_", "-")) }

// ffBenchEnv is a deployment's settings, as a benchmark and a test set
// them in the process's environment, and a flag.
var ffBenchEnv = map[string]string{
	"EDGE_BRAND": "aurora", "PMS_BASE_URL": "https://pms.internal.example/api", "PMS_TOKEN": "t0ken",
	"EDGE_KEYS_FILE": "/etc/edge/keys.json", "EDGE_PUBLIC_URL": "https://api.aurora.example.com",
	"EDGE_TLS_CERT": "/etc/edge/tls.crt", "EDGE_TLS_KEY": "/etc/edge/tls.key", "EDGE_ADDR": ":8443",
	"EDGE_REDIS_URL": "redis://redis:6379/0", "EDGE_FLEET_SECRET": strings.Repeat("s", 32),
	"EDGE_TRUSTED_PROXIES": "10.0.0.0/8", "EDGE_RATE_LIMIT": "50", "EDGE_CACHE_TTL": "30s", "EDGE_LOG_LEVEL": "info",
}

func setBenchEnv(tb testing.TB) {
	for k, v := range ffBenchEnv {
		tb.Setenv(k, v)
	}
}

// Both read a deployment's settings alike.
func TestSettingsFFSameValues(t *testing.T) {
	setBenchEnv(t)
	ours, err := parseSettings([]string{"--max-concurrent=2048"}, os.LookupEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := parseSettingsFF([]string{"--" + ffFlag("EDGE_MAX_CONCURRENT") + "=2048"})
	if err != nil {
		t.Fatal(err)
	}
	ours.Redis.ReadFile, lib.Redis.ReadFile = nil, nil // funcs: equal only when nil
	if ours.MaxConcurrent != 2048 || !ours.AddrSet || !reflect.DeepEqual(ours, lib) {
		t.Errorf("ours %+v\nff   %+v", ours, lib)
	}
}

// Every setting of a deployment, parsed and checked: resolve, then ff.
func BenchmarkSettings(b *testing.B) {
	setBenchEnv(b)
	b.Run("resolve", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseSettings([]string{"--max-concurrent=2048"}, os.LookupEnv, io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ff", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseSettingsFF([]string{"--" + ffFlag("EDGE_MAX_CONCURRENT") + "=2048"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
