package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// start runs the program on a free port and returns its base URL, a channel
// of its further stdout lines, and a stop function that cancels it and
// returns run's error.
func start(t *testing.T, env map[string]string, args ...string) (string, <-chan string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"pmsim", "--addr", "127.0.0.1:0"}, args...),
			mapEnv(env), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var first string
	select {
	case first = <-lines:
	case err := <-done:
		t.Fatalf("run ended before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no address printed")
	}
	url, ok := strings.CutPrefix(first, "pmsim listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("first line %q", first)
	}
	stopped := false
	stop := func() error {
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("run did not stop after cancel")
			return nil
		}
	}
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	return url, lines, stop
}

func get(t *testing.T, url, token string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func TestRunServesTheAPIAndStops(t *testing.T) {
	url, lines, stop := start(t, map[string]string{"PMS_TOKEN": "tok"},
		"--brands", "2", "--hotels", "10", "--page-size", "4", "--seed", "7")
	list := url + "/internal/v2/brands/borealis/hotels?limit=100"
	resp, body := get(t, list, "tok")
	var page struct {
		Hotels     []json.RawMessage `json:"hotels"`
		NextCursor *string           `json:"nextCursor"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &page) != nil {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	if len(page.Hotels) != 4 || page.NextCursor == nil {
		t.Fatalf("--page-size 4 gave %d hotels, next %v", len(page.Hotels), page.NextCursor)
	}
	if resp, _ := get(t, list, ""); resp.StatusCode != 401 {
		t.Fatalf("PMS_TOKEN not enforced: %d", resp.StatusCode)
	}
	// --token wins over PMS_TOKEN.
	url2, _, _ := start(t, map[string]string{"PMS_TOKEN": "tok"}, "--token", "flag-tok")
	if resp, _ := get(t, url2+"/internal/v2/brands/aurora/hotels", "flag-tok"); resp.StatusCode != 200 {
		t.Fatalf("--token not used: %d", resp.StatusCode)
	}
	if resp, body := get(t, url+"/internal/v2/brands/cascade/hotels", "tok"); string(body) != `{"hotels":[],"nextCursor":null}` {
		t.Fatalf("--brands 2 still serves cascade: %d %s", resp.StatusCode, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if len(rest) == 0 || rest[len(rest)-1] != "pmsim stopped" {
		t.Fatalf("output after the address: %q", rest)
	}
	if _, err := http.Get(list); err == nil {
		t.Fatal("still serving after stop")
	}
}

func TestRunFaultFlags(t *testing.T) {
	url, _, _ := start(t, nil, "--error-status", "503", "--retry-after", "3", "--latency", "20ms")
	began := time.Now()
	resp, body := get(t, url+"/internal/v2/brands/aurora/hotels", "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "3" || string(body) != `{"error":"service_unavailable"}` {
		t.Fatalf("got %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if d := time.Since(began); d < 20*time.Millisecond {
		t.Fatalf("--latency 20ms answered in %v", d)
	}

	url, _, _ = start(t, nil, "--malformed")
	if resp, body := get(t, url+"/internal/v2/brands/aurora/hotels", ""); resp.StatusCode != 200 || json.Valid(body) {
		t.Fatalf("--malformed: %d %s", resp.StatusCode, body)
	}
}

// --churn changes the data while the simulator serves: a walk some time
// later differs from the first (docs/operations.md, "The PMS simulator").
func TestRunChurn(t *testing.T) {
	url, lines, _ := start(t, nil, "--brands", "1", "--hotels", "30", "--churn", "1ms")
	if l := <-lines; !strings.HasPrefix(l, "brands") {
		t.Fatalf("second line %q", l)
	}
	list := url + "/internal/v2/brands/aurora/hotels?limit=500"
	_, first := get(t, list, "")
	testkit.Eventually(t, "the data changes between walks", func() bool {
		_, body := get(t, list, "")
		return string(body) != string(first)
	})
	if err := run(t.Context(), []string{"pmsim", "--churn", "-1s"}, mapEnv(nil), io.Discard, io.Discard); err == nil {
		t.Error("--churn -1s: no error")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--error-rate", "1.5"}, {"--brands", "0"}, {"--hotels", "-1"}, {"--page-size", "-2"},
		{"--error-status", "200"}, {"--latency", "-1s"}, {"--oversize", "-5"}, {"--fail-first", "-1"},
		{"--addr", "256.0.0.1:bad"}, {"--nope"}, {"--seed", "x"}, {"extra"},
	} {
		err := run(t.Context(), append([]string{"pmsim"}, args...), mapEnv(nil), io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	var help strings.Builder
	env := mapEnv(map[string]string{"PMS_TOKEN": "very-secret-token"})
	if err := run(t.Context(), []string{"pmsim", "--help"}, env, io.Discard, &help); err != nil {
		t.Fatalf("--help: %v", err)
	}
	if strings.Contains(help.String(), "very-secret-token") {
		t.Fatal("--help prints PMS_TOKEN")
	}
	for _, flag := range []string{"-addr", "-brands", "-hotels", "-seed", "-page-size", "-shuffle", "-token", "-latency", "-jitter",
		"-error-rate", "-error-status", "-retry-after", "-reset", "-truncate", "-malformed", "-oversize", "-fail-first", "-churn"} {
		if !strings.Contains(help.String(), flag) {
			t.Errorf("--help lacks %s", flag)
		}
	}
}

// mapEnv is an environment of exactly the variables of m, read as
// os.LookupEnv reads the process's.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The start-up hint's curl works as printed: with a token, it sends it
// (docs/operations.md's example sets --token); without one, it sends none.
func TestRunHintWorksAsPrinted(t *testing.T) {
	hint := regexp.MustCompile(`try: curl (?:-H 'Authorization: Bearer ([^']*)' )?'([^']+)'`)
	for _, tc := range []struct {
		args  []string
		token string
	}{{[]string{"--token", "pms-secret"}, "pms-secret"}, {[]string{"--token", ""}, ""}} {
		url, lines, _ := start(t, nil, tc.args...)
		line := <-lines
		m := hint.FindStringSubmatch(line)
		if m == nil || !strings.HasPrefix(m[2], url) {
			t.Fatalf("hint %q does not name %s", line, url)
		}
		if m[1] != tc.token {
			t.Errorf("hint %q sends token %q, the simulator requires %q", line, m[1], tc.token)
		}
		if resp, body := get(t, m[2], m[1]); resp.StatusCode != 200 {
			t.Errorf("the hint's curl (%s): %d %s", line, resp.StatusCode, body)
		}
	}
}
