package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// started is a run of the program in the background.
type started struct {
	stdout *testkit.LogBuffer
	stderr *testkit.LogBuffer
	done   chan error
	cancel context.CancelFunc
}

func start(t *testing.T, env map[string]string, args ...string) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{stdout: &testkit.LogBuffer{}, stderr: &testkit.LogBuffer{}, done: make(chan error, 1), cancel: cancel}
	go func() { s.done <- run(ctx, append([]string{"edge"}, args...), mapEnv(env), s.stdout, s.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("run returned %v", err)
			}
		case <-time.After(testkit.EventuallyTimeout):
			t.Errorf("run did not stop")
		}
	})
	return s
}

// waitFor polls stdout until re matches, or fails.
func (s *started) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(s.stdout.String()); m != nil {
			return m
		}
		select {
		case err := <-s.done:
			t.Fatalf("run ended early: %v\nstderr: %s", err, s.stderr.String())
		case <-time.After(20 * time.Millisecond): // poll interval; outside event: run printing re
		}
	}
	t.Fatalf("no %s in stdout: %s\nstderr: %s", re, s.stdout.String(), s.stderr.String())
	return nil
}

// sighup sends SIGHUP to this process and waits until hup (a channel the
// test has registered with signal.Notify) receives it: the outside event is
// the signal's delivery. Otherwise, on a busy machine, a signal still
// pending when the test ends (the watcher may have reloaded first) would
// meet no handler and kill the test binary.
func sighup(t *testing.T, hup chan os.Signal) {
	t.Helper()
	for len(hup) > 0 { // an earlier signal, already handled
		<-hup
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hup:
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatal("SIGHUP never delivered")
	}
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	testkit.Eventually(t, base+"health answers ok", func() bool {
		res, err := http.Get(base + "health")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode == 200 && string(body) == `{"status":"ok"}`
	})
}

var (
	urlLine  = regexp.MustCompile(`URL:\s+(http://\S+/v1/)`)
	keyLines = regexp.MustCompile(`live key:\s+(svc_live_\S+)\s+test key:\s+(svc_test_\S+)`)
	curlLine = regexp.MustCompile(`(?m)^\s*(curl -H 'Authorization: Bearer (\S+)' (\S+))$`)
)

// README.md: the demo starts with nothing set but a free
// port, and its printed curl line answers 200 with a page of properties.
func TestDemoEndToEnd(t *testing.T) {
	s := start(t, map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off"})
	base := s.waitFor(t, urlLine)[1]
	waitHealthy(t, base)
	ks := s.waitFor(t, keyLines)
	curl := s.waitFor(t, curlLine)
	if curl[2] != ks[1] {
		t.Errorf("curl line uses %s, want the live key", curl[2])
	}

	var body []byte
	if path, err := exec.LookPath("curl"); err == nil {
		args := []string{"-sS", "-H", "Authorization: Bearer " + curl[2], curl[3]}
		out, err := exec.Command(path, args...).Output()
		if err != nil {
			t.Fatalf("curl: %v", err)
		}
		body = out
	} else { // no curl binary: send what the line says with net/http
		req, _ := http.NewRequest("GET", curl[3], nil)
		req.Header.Set("Authorization", "Bearer "+curl[2])
		req.Header.Set("User-Agent", "curl/8.0")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		body, _ = io.ReadAll(res.Body)
	}
	var page struct {
		Data []struct {
			Object string `json:"object"`
		} `json:"data"`
		Meta struct {
			Pagination struct{ Total int } `json:"pagination"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatalf("curl answered %s: %v", body, err)
	}
	if len(page.Data) == 0 || page.Data[0].Object != "property" || page.Meta.Pagination.Total < len(page.Data) {
		t.Errorf("curl answered %s", body)
	}

	// The demo's test key is served by the embedded sandbox.
	req, _ := http.NewRequest("GET", base+"properties", nil)
	req.Header.Set("Authorization", "Bearer "+ks[2])
	req.Header.Set("User-Agent", "e2e/1.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("test key: status %d", res.StatusCode)
	}
	if strings.Contains(s.stderr.String(), curl[2]) || strings.Contains(s.stderr.String(), ks[2]) {
		t.Errorf("a demo key appears in the logs")
	}
	// The simulators' unmappable records (one in eight) are counted on each
	// walk's line: the demo's log has no warning to alarm a first reader.
	testkit.Eventually(t, "both first walks are logged", func() bool {
		return strings.Count(s.stderr.String(), `"msg":"pms walk finished"`) >= 2
	})
	if strings.Contains(s.stderr.String(), `"level":"WARN"`) {
		t.Errorf("the demo logs warnings:\n%s", s.stderr.String())
	}
}

// Production mode: an external PMS, a key file reloaded on SIGHUP; a bad
// reload keeps the old keys.
func TestRunWithExternalPMSAndSIGHUP(t *testing.T) {
	hup := make(chan os.Signal, 1) // held so SIGHUP never takes the default action
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"}))
	defer sim.Close()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.json")
	first, firstRec := keystest.Mint(t, "aurora", keys.ModeLive)
	keystest.Write(t, keysFile, firstRec)
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL, "PMS_TOKEN": "pms-secret-token",
	})
	addr := waitListening(t, s)
	base := "http://" + addr + "/v1/"
	waitHealthy(t, base)
	if got := call(t, base+"properties", first); got != 200 {
		t.Fatalf("first key: %d", got)
	}

	second, secondRec := keystest.Mint(t, "aurora", keys.ModeLive)
	// Rewrite in place without changing size-stable signals the watcher may
	// use; SIGHUP must work whether or not the watcher saw it first.
	keystest.Write(t, keysFile, secondRec)
	sighup(t, hup)
	testkit.Eventually(t, "the reloaded keys are in force", func() bool { return call(t, base+"", second) == 200 && call(t, base+"", first) == 401 })

	if err := os.WriteFile(keysFile, []byte(`{"keys": [ {"id": "broken"`), 0o600); err != nil {
		t.Fatal(err)
	}
	sighup(t, hup)
	testkit.Eventually(t, "the failed reload is logged", func() bool { return strings.Contains(s.stderr.String(), "reload failed") })
	if got := call(t, base+"", second); got != 200 {
		t.Errorf("after a bad reload the old key answers %d", got)
	}
	for _, secret := range []string{first, second, "pms-secret-token"} {
		if strings.Contains(s.stderr.String(), secret) {
			t.Errorf("a secret appears in the logs")
		}
	}
}

var listening = regexp.MustCompile(`"msg":"edge listening","addr":"([^"]+)"`)

func waitListening(t *testing.T, s *started) string {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("stderr: %s", s.stderr)
		}
	}()
	var addr string
	testkit.Eventually(t, "the edge logs its listener", func() bool {
		m := listening.FindStringSubmatch(s.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}

// waitAdmin waits for the edge to log its admin listener in log and
// returns the listener's base URL.
func waitAdmin(t *testing.T, log interface{ String() string }) string {
	t.Helper()
	var admin string
	testkit.Eventually(t, "the admin listener is logged", func() bool {
		if m := adminListening.FindStringSubmatch(log.String()); m != nil {
			admin = "http://" + m[1]
		}
		return admin != ""
	})
	return admin
}

func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want []string
	}{
		{env: map[string]string{"EDGE_CACHE_TTL": "soon"}, want: []string{"EDGE_CACHE_TTL", `"soon"`}},
		{args: []string{"--cache-stale", "-1s"}, want: []string{"--cache-stale", `"-1s"`}},
		{env: map[string]string{"EDGE_CODE_SOURCE": "hotel_code"}, want: []string{"EDGE_CODE_SOURCE", `"hotel_code"`}},
		{env: map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_BRAND": "aurora"}, want: []string{"EDGE_KEYS_FILE"}},
		{env: map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_KEYS_FILE": "/k.json"}, want: []string{"EDGE_BRAND"}},
		{env: map[string]string{"PMS_BASE_URL": "pms:9000"}, want: []string{"PMS_BASE_URL", `"pms:9000"`}},
		{env: map[string]string{"EDGE_TLS_CERT": "/c.pem"}, want: []string{"EDGE_TLS_KEY"}},
		{env: map[string]string{"EDGE_LOG_LEVEL": "loud"}, want: []string{"EDGE_LOG_LEVEL", `"loud"`}},
		{env: map[string]string{"EDGE_RATE_LIMIT": "fast"}, want: []string{"EDGE_RATE_LIMIT", `"fast"`}},
		{args: []string{"--rate-burst", "-3"}, want: []string{"--rate-burst", `"-3"`}},
		{env: map[string]string{"PMS_BASE_URL": "http://pms:9000", "EDGE_BRAND": "aurora", "EDGE_KEYS_FILE": "/nonexistent/keys.json", "EDGE_DOCS_URL": testDocsURL}, want: []string{"EDGE_KEYS_FILE", "/nonexistent/keys.json"}},
	} {
		var stderr strings.Builder
		err := run(context.Background(), append([]string{"edge"}, tc.args...), mapEnv(tc.env), io.Discard, &stderr)
		if err == nil {
			t.Errorf("%v %v: no error", tc.env, tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v %v: error %q does not name %s", tc.env, tc.args, err, w)
			}
		}
	}
}

func TestHelpListsSettings(t *testing.T) {
	var stderr strings.Builder
	if err := run(context.Background(), []string{"edge", "--help"}, mapEnv(nil), io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, st := range settingTable() {
		if !strings.Contains(stderr.String(), st.Env) || !strings.Contains(stderr.String(), "--"+st.Flag) ||
			!strings.Contains(stderr.String(), fmt.Sprintf("%q", st.Def)) {
			t.Errorf("--help does not list %s / --%s with its default", st.Env, st.Flag)
		}
	}
}

func TestKeysNew(t *testing.T) {
	var stdout strings.Builder
	err := run(context.Background(), []string{"edge", "keys", "new", "--brand", "aurora", "--mode", "test"}, mapEnv(nil), &stdout, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	token := regexp.MustCompile(`svc_test_[A-Za-z0-9]{24,}`).FindString(stdout.String())
	if token == "" {
		t.Fatalf("no key printed: %s", stdout.String())
	}
	digest := keys.Digest(token)
	if !strings.Contains(stdout.String(), hex.EncodeToString(digest[:])) {
		t.Errorf("the printed record does not carry the key's digest")
	}
}

// call is getWithKey for a test that needs only the status.
func call(t *testing.T, url, key string) int {
	t.Helper()
	res, _ := getWithKey(t, url, key)
	return res.StatusCode
}

// mapEnv is an environment of exactly the variables of m, read as
// os.LookupEnv reads the process's.
// deployed is env outside the demo: with PMS_BASE_URL, and the settings it
// makes required (brand, key file, public URL), unless env sets them. A
// deployment setting without PMS_BASE_URL is refused (docs/contract.md
// section 21), so the tests of such settings use it.
func deployed(env map[string]string) map[string]string {
	out := map[string]string{"PMS_BASE_URL": "http://pms.internal:9000", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": "/etc/edge/keys.json", "EDGE_PUBLIC_URL": "https://api.aurora.example.com"}
	for k, v := range env {
		out[k] = v
	}
	return out
}

func mapEnv(m map[string]string) lookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// testDocsURL is the EDGE_DOCS_URL of the tests that start the edge outside
// the demo and do not follow its links: outside the demo a docs URL (or
// EDGE_PUBLIC_URL) is required (docs/contract.md section 18).
const testDocsURL = "https://developer.example.com/partner-api"
