package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// freePort is a loopback address the kernel had free a moment ago, for a
// server that must be told its address before it listens (the edge's own
// EDGE_PUBLIC_URL, Prometheus, Jaeger).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// docs/contract.md section 18: outside the demo, with EDGE_PUBLIC_URL set to the
// edge's own address and no docs settings, every problem type and
// documentationUrl the edge writes answers 200 HTML from the edge itself:
// those of real answers, the API info's documentationUrl, and the type of
// every code in the registry.
func TestPublicURLLinksOpen(t *testing.T) {
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"}))
	defer sim.Close()
	keysFile, key := keystest.Live(t, "aurora")
	addr := freePort(t)
	origin := "http://" + addr
	s := start(t, map[string]string{
		"EDGE_ADDR": addr, "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora", "EDGE_PUBLIC_URL": origin,
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "PMS_TOKEN": "pms-secret-token",
	})
	if got := waitListening(t, s); got != addr {
		t.Fatalf("listening on %s, want %s", got, addr)
	}
	base := origin + "/v1/"
	waitHealthy(t, base)

	var links []string
	problemType := func(url string, hdr ...string) {
		t.Helper()
		res, body := get(t, url, hdr...)
		var pb struct{ Type string }
		if err := json.Unmarshal([]byte(body), &pb); err != nil || res.StatusCode < 400 || pb.Type == "" {
			t.Fatalf("%s: %d %s, want a problem", url, res.StatusCode, body)
		}
		links = append(links, pb.Type)
	}
	auth := []string{"Authorization", "Bearer " + key, "User-Agent", "links-test/1.0"}
	problemType(base + "properties")                            // 401 MISSING_API_KEY
	problemType(base+"properties/", auth...)                    // 400 TRAILING_SLASH
	problemType(base+"properties?colour=red", auth...)          // 400 UNKNOWN_QUERY_PARAMETER
	problemType(base+"nope", auth...)                           // 404 ROUTE_NOT_FOUND
	problemType(base+"properties", "Authorization", "Bearer x") // 401 INVALID_API_KEY
	_, info := get(t, base, auth...)
	var api struct {
		Data struct {
			DocumentationURL string `json:"documentationUrl"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(info), &api); err != nil || api.Data.DocumentationURL == "" {
		t.Fatalf("API info %s: no documentationUrl", info)
	}
	links = append(links, api.Data.DocumentationURL)
	for _, e := range problem.All() {
		links = append(links, problem.TypeURI(api.Data.DocumentationURL, e.Code))
	}
	if want := origin + "/docs"; api.Data.DocumentationURL != want {
		t.Errorf("documentationUrl %q, want %q", api.Data.DocumentationURL, want)
	}
	for _, u := range links {
		if !strings.HasPrefix(u, origin+"/docs") {
			t.Errorf("link %s is not on the edge's own docs", u)
			continue
		}
		res, page := get(t, u)
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || h1.FindStringSubmatch(page) == nil {
			t.Errorf("%s: %d %s, want 200 HTML with a heading", u, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// Outside the demo a docs URL nobody gave is a start-up error naming both
// settings; with the site off, EDGE_PUBLIC_URL alone is not enough either.
// The demo needs neither, and EDGE_DOCS_URL alone is enough outside it.
func TestPublicURLRequired(t *testing.T) {
	outside := func(extra map[string]string) map[string]string {
		env := map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_BRAND": "aurora", "EDGE_KEYS_FILE": "/k.json"}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	for _, tc := range []struct {
		env  map[string]string
		want []string // nil: valid
	}{
		{outside(nil), []string{"EDGE_PUBLIC_URL", "EDGE_DOCS_URL"}},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com", "EDGE_DOCS_PATH": "off"}), []string{"EDGE_DOCS_PATH", "EDGE_DOCS_URL"}},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "api.aurora.example.com"}), []string{"EDGE_PUBLIC_URL", `"api.aurora.example.com"`}},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com/?x=1"}), []string{"EDGE_PUBLIC_URL"}},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com/"}), nil},
		{outside(map[string]string{"EDGE_DOCS_URL": "https://developer.aurora.example.com"}), nil},
		{nil, nil},
	} {
		cfg, err := parseSettings(nil, mapEnv(tc.env), io.Discard)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%v: %v", tc.env, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: no error (docs URL %q)", tc.env, cfg.DocsURL)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %s", tc.env, err, w)
			}
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com/"}), "https://api.aurora.example.com/docs"},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com", "EDGE_DOCS_PATH": "/developer/"}), "https://api.aurora.example.com/developer"},
		{outside(map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com", "EDGE_DOCS_URL": "https://docs.example.test/p"}), "https://docs.example.test/p"},
		{nil, ""}, // the demo: its own address, once it listens
	} {
		cfg, err := parseSettings(nil, mapEnv(tc.env), io.Discard)
		if err != nil || cfg.DocsURL != tc.want {
			t.Errorf("%v: docs URL %q (%v), want %q", tc.env, cfg.DocsURL, err, tc.want)
		}
	}
	// The same holds through run, before anything starts.
	err := run(context.Background(), []string{"edge"}, mapEnv(outside(nil)), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_PUBLIC_URL") || !strings.Contains(err.Error(), "EDGE_DOCS_URL") {
		t.Errorf("run: %v, want an error naming EDGE_PUBLIC_URL and EDGE_DOCS_URL", err)
	}
}

// docs/contract.md section 18: the demo listens on loopback unless EDGE_ADDR
// says otherwise; a deployment keeps :8080.
func TestDemoListensOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "127.0.0.1:8080"},
		{map[string]string{"EDGE_ADDR": ":9000"}, ":9000"},
		{map[string]string{"EDGE_ADDR": "0.0.0.0:8080"}, "0.0.0.0:8080"},
	} {
		cfg, err := parseSettings(nil, mapEnv(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		demoDefaults(&cfg)
		if cfg.Addr != tc.want {
			t.Errorf("%v: the demo listens on %q, want %q", tc.env, cfg.Addr, tc.want)
		}
	}
	cfg, err := parseSettings(nil, mapEnv(map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": "/k.json", "EDGE_DOCS_URL": testDocsURL}), io.Discard)
	if err != nil || cfg.Addr != ":8080" {
		t.Errorf("outside the demo: %q (%v), want :8080", cfg.Addr, err)
	}
}

// docs/contract.md section 18: a listener that cannot bind, admin included,
// stops start-up with an error naming its setting; an empty
// EDGE_ADMIN_ADDR still disables the admin listener.
func TestListenerBindFailure(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	busy := taken.Addr().String()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"EDGE_ADDR": busy, "EDGE_ADMIN_ADDR": ""}, "EDGE_ADDR"},
		{map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": busy}, "EDGE_ADMIN_ADDR"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"edge"}, mapEnv(tc.env), io.Discard, io.Discard) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(testkit.EventuallyTimeout): // a bound, not a wait: run fails at once
			t.Errorf("%v: the edge started", tc.env)
			cancel()
			err = <-done
		}
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), busy) {
			t.Errorf("%v: %v, want an error naming %s and its address", tc.env, err, tc.want)
		}
		var ne *net.OpError
		if !errors.As(err, &ne) {
			t.Errorf("%v: %v does not wrap the bind error", tc.env, err)
		}
	}

	s := start(t, map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": ""})
	base := s.waitFor(t, urlLine)[1]
	waitHealthy(t, base)
	if strings.Contains(s.stderr.String(), "admin listening") {
		t.Errorf("EDGE_ADMIN_ADDR empty, yet the admin listener started: %s", s.stderr)
	}
}

// edge docs build defaults its docs URL the way the edge serves it:
// EDGE_DOCS_URL, else EDGE_PUBLIC_URL + EDGE_DOCS_PATH (/docs when unset or
// off), else the documentation default.
func TestDocsBuildURL(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "https://developer.example.com/partner-api"},
		{map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com/"}, "https://api.aurora.example.com/docs"},
		{map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com", "EDGE_DOCS_PATH": "/developer/"}, "https://api.aurora.example.com/developer"},
		{map[string]string{"EDGE_PUBLIC_URL": "https://api.aurora.example.com", "EDGE_DOCS_URL": "https://docs.example.test/p"}, "https://docs.example.test/p"},
	} {
		p, _, err := docsBuildLine.Parse(settingTable(), nil, mapEnv(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := docsBuildURL(p); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.env, got, tc.want)
		}
	}
}
