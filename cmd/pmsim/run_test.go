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

// The start-up hint is a request that works: with the token the
// simulator requires, named as it was given (the variable's value is never
// printed), and the counters' URL.
func TestRunHintCarriesTheToken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		header string // the hint's Authorization header, "" for none
		token  string // what a shell makes of it
	}{
		{"PMS_TOKEN", map[string]string{"PMS_TOKEN": "env-s3cret"}, nil, `-H "Authorization: Bearer $PMS_TOKEN" `, "env-s3cret"},
		{"--token", nil, []string{"--token", "flag-tok"}, `-H 'Authorization: Bearer flag-tok' `, "flag-tok"},
		{"none", nil, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, lines, _ := start(t, tc.env, tc.args...)
			hint := <-lines
			if strings.Contains(hint, "env-s3cret") {
				t.Fatalf("hint prints PMS_TOKEN's value: %q", hint)
			}
			_, curl, ok := strings.Cut(hint, "try: curl ")
			if !ok || !strings.HasPrefix(curl, tc.header+"'"+url+"/internal/") {
				t.Fatalf("hint %q; want curl %s'%s/internal/...'", hint, tc.header, url)
			}
			if resp, body := get(t, strings.Trim(strings.TrimPrefix(curl, tc.header), "'"), tc.token); resp.StatusCode != 200 {
				t.Fatalf("the hint's request: %d %s", resp.StatusCode, body)
			}
			<-lines // traces exporter
			if l := <-lines; l != "counters: curl "+url+"/_pmsim/stats" {
				t.Fatalf("counters line %q", l)
			}
		})
	}
}

// --churn-changes sets a step's changes: with 7 or more, every kind comes,
// and GET /_pmsim/stats counts them with the requests and pages served.
func TestRunChurnChangesAndStats(t *testing.T) {
	url, lines, _ := start(t, nil, "--brands", "1", "--hotels", "100", "--churn", "1ms", "--churn-changes", "14")
	for l := range lines {
		if strings.HasPrefix(l, "churn:") {
			if !strings.Contains(l, "14 changes per brand") || !strings.Contains(l, "create") {
				t.Fatalf("churn line %q", l)
			}
			break
		}
	}
	type stats struct {
		Requests, Lists, Pages int64
		Churn                  map[string]int64
	}
	read := func() stats {
		resp, body := get(t, url+"/_pmsim/stats", "")
		var st stats
		if resp.StatusCode != 200 || json.Unmarshal(body, &st) != nil {
			t.Fatalf("stats: %d %s", resp.StatusCode, body)
		}
		return st
	}
	lists := int64(0)
	testkit.Eventually(t, "every kind of change made", func() bool {
		get(t, url+"/internal/v2/brands/aurora/hotels?limit=500", "")
		lists++
		st := read()
		for _, k := range []string{"rename", "status", "replace", "unmap", "remap", "remove", "create"} {
			if st.Churn[k] == 0 {
				return false
			}
		}
		return true
	})
	st := read()
	if st.Requests != lists || st.Lists != lists || st.Pages != lists {
		t.Errorf("%d list requests made; stats %+v", lists, st)
	}
	sum := int64(0)
	for k, n := range st.Churn {
		if k != "steps" && k != "changes" {
			sum += n
		}
	}
	if st.Churn["changes"] != sum || st.Churn["changes"] > 14*st.Churn["steps"] || st.Churn["steps"] == 0 {
		t.Errorf("churn %v: changes are not the sum of the kinds, or more than 14 a step", st.Churn)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--error-rate", "1.5"}, {"--brands", "0"}, {"--hotels", "-1"}, {"--page-size", "-2"},
		{"--error-status", "200"}, {"--latency", "-1s"}, {"--oversize", "-5"}, {"--fail-first", "-1"},
		{"--addr", "256.0.0.1:bad"}, {"--nope"}, {"--seed", "x"}, {"extra"}, {"--churn-changes", "-1"},
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
		"-error-rate", "-error-status", "-retry-after", "-reset", "-truncate", "-malformed", "-oversize", "-fail-first", "-churn", "-churn-changes"} {
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
