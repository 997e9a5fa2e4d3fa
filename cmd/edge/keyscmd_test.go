package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// keysCLI runs `edge keys ...` of a built binary.
type keysCLI struct {
	t    *testing.T
	bin  string
	file string
}

// run runs the binary with args (EDGE_KEYS_FILE unset unless the test sets
// it in env) and returns stdout, stderr and the exit status; after every
// command that leaves the key file, the file must have mode 0600.
func (c keysCLI) run(env []string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("%v: %v", args, err)
	}
	if fi, err := os.Stat(c.file); err == nil && fi.Mode().Perm() != 0o600 {
		c.t.Errorf("after %v the key file has mode %v, want 0600", args, fi.Mode().Perm())
	}
	return stdout.String(), stderr.String(), code
}

// ok runs `edge keys args... --file FILE` and fails unless it exits 0.
func (c keysCLI) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(nil, append(append([]string{"keys"}, args...), "--file", c.file)...)
	if code != 0 {
		c.t.Fatalf("edge keys %v: exit %d\n%s", args, code, errOut)
	}
	return out
}

// minted reads the {"id","key"} object of add --json or rotate --json.
func (c keysCLI) minted(out string) (id, key string) {
	c.t.Helper()
	var m struct{ ID, Key string }
	if err := json.Unmarshal([]byte(out), &m); err != nil || m.ID == "" || m.Key == "" {
		c.t.Fatalf("not one {id, key} object: %q (%v)", out, err)
	}
	return m.ID, m.Key
}

// docs/contract.md section 18: the real binary takes
// a key through its life while a real edge serves with the file.
func TestKeyLifeCycleThroughTheBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	dir := t.TempDir()
	c := keysCLI{t: t, bin: bin, file: filepath.Join(dir, "keys.json")}

	// Help exits 0 with the usage.
	for _, args := range [][]string{{"keys", "--help"}, {"keys", "-h"}, {"help"}, {"keys", "add", "--help"}} {
		out, errOut, code := c.run(nil, args...)
		if code != 0 || !strings.Contains(out, "edge keys") {
			t.Errorf("edge %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}

	// add creates the file; the key is printed once.
	out := c.ok("add", "--brand", "aurora", "--mode", "live", "--partner", "Acme", "--expires", "720h",
		"--rate-limit", "1000", "--burst", "1000", "--client-id", "acme-client", "--json")
	id, key := c.minted(out)
	if !strings.HasPrefix(key, "svc_live_") {
		t.Fatalf("key %q is not a live key", key)
	}
	_, other := c.minted(c.ok("add", "--json", "--brand", "aurora", "--mode", "live"))

	// A real edge serves with the file.
	sim := pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"})
	pms := httptest.NewServer(sim)
	t.Cleanup(pms.Close)
	edgeLog := &testkit.LogBuffer{}
	edgeCmd := exec.Command(bin)
	edgeCmd.Env = []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora",
		"EDGE_KEYS_FILE=" + c.file, "PMS_BASE_URL=" + pms.URL, "PMS_TOKEN=pms-secret-token", "EDGE_DOCS_URL=" + testDocsURL}
	edgeCmd.Stdout, edgeCmd.Stderr = io.Discard, edgeLog
	if err := edgeCmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = edgeCmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = edgeCmd.Process.Kill(); <-exited })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("edge log:\n%s", edgeLog)
		}
	})
	url := "http://" + waitListening(t, &started{stderr: edgeLog}) + "/v1/properties?perPage=1"
	status := func(key string) (int, string) {
		res, body := getWithKey(t, url, key)
		return res.StatusCode, string(body)
	}
	becomes := func(what, key string, want int, code string) {
		t.Helper()
		testkit.Eventually(t, what, func() bool {
			got, body := status(key)
			return got == want && strings.Contains(body, code)
		})
	}
	becomes("the added key answers 200", key, 200, "")

	c.ok("suspend", id) // flags after the id
	becomes("the suspended key answers 403 API_KEY_SUSPENDED", key, 403, "API_KEY_SUSPENDED")
	if got, _ := status(other); got != 200 {
		t.Errorf("the other key answers %d while the first is suspended", got)
	}
	if _, errOut, code := c.run(nil, "keys", "resume", "--file", c.file, id); code != 0 { // flags before the id
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	becomes("the resumed key answers 200", key, 200, "")

	// rotate: both keys work for the overlap, then only the new one.
	const overlap = 2 * time.Second
	rotated := time.Now()
	newID, newKey := c.minted(c.ok("rotate", id, "--overlap", overlap.String(), "--json"))
	becomes("the rotated-in key answers 200", newKey, 200, "")
	got, _ := status(key)
	if got != 200 && time.Since(rotated) < overlap {
		t.Errorf("the old key answers %d within the overlap", got)
	} else if got != 200 {
		t.Errorf("the old key answers %d, and the check came %s after rotate: the machine is too slow to tell", got, time.Since(rotated))
	}
	becomes("the old key answers 401 after the overlap", key, 401, "API_KEY_EXPIRED")
	if got, _ := status(newKey); got != 200 {
		t.Errorf("the new key answers %d after the overlap", got)
	}

	// list --json: the grants, never a key or a digest.
	listed := c.ok("list", "--json")
	file, _ := os.ReadFile(c.file)
	secrets := append(regexp.MustCompile(`[0-9a-f]{64}`).FindAllString(string(file), -1), key, newKey, other, "sha256", "svc_")
	for _, s := range secrets {
		if strings.Contains(listed, s) {
			t.Errorf("list --json shows %q", s)
		}
	}
	var entries []struct {
		ID        string
		ClientID  string
		RateLimit *struct{ PerSecond float64 }
		ExpiresAt *time.Time
	}
	if err := json.Unmarshal([]byte(listed), &entries); err != nil || len(entries) != 3 {
		t.Fatalf("list --json: %v, %d entries:\n%s", err, len(entries), listed)
	}
	if e := entries[2]; e.ID != newID || e.ClientID != "acme-client" || e.RateLimit == nil || e.RateLimit.PerSecond != 1000 ||
		e.ExpiresAt == nil || e.ExpiresAt.Sub(rotated) < 700*time.Hour {
		t.Errorf("the successor lost the grants of add: %+v", e)
	}
	table := c.ok("list")
	if !strings.Contains(table, newID) {
		t.Errorf("list does not show %s:\n%s", newID, table)
	}
	for _, s := range secrets {
		if strings.Contains(table, s) {
			t.Errorf("list shows %q", s)
		}
	}

	c.ok("revoke", newID)
	becomes("the revoked key answers 401", newKey, 401, "")

	// Twenty concurrent adds to a file that does not exist yet keep twenty records.
	many := keysCLI{t: t, bin: bin, file: filepath.Join(dir, "many.json")}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, errOut, code := many.run([]string{"EDGE_KEYS_FILE=" + many.file}, "keys", "add", "--brand", "aurora", "--mode", "live"); code != 0 {
				t.Errorf("concurrent add: exit %d: %s", code, errOut)
			}
		})
	}
	wg.Wait()
	var records []json.RawMessage
	if err := json.Unmarshal([]byte(many.ok("list", "--json")), &records); err != nil || len(records) != 20 {
		t.Errorf("after twenty concurrent adds: %d records (%v)", len(records), err)
	}

	// check: 1 naming the fault, 0 when good; a broken file is not edited.
	broken := keysCLI{t: t, bin: bin, file: filepath.Join(dir, "broken.json")}
	bad := bytes.Replace(file, []byte(`"status": "active"`), []byte(`"status": "paused"`), 1)
	if err := os.WriteFile(broken.file, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := broken.run(nil, "keys", "check", "--file", broken.file); code != 1 || !strings.Contains(errOut, `status: must be "active" or "suspended"`) {
		t.Errorf("check of a broken file: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := broken.run(nil, "keys", "revoke", entries[1].ID, "--file", broken.file); code != 1 {
		t.Errorf("revoke on a broken file: exit %d", code)
	}
	if after, _ := os.ReadFile(broken.file); !bytes.Equal(after, bad) {
		t.Error("an edit rewrote a file that does not load")
	}
	if out, errOut, code := c.run([]string{"EDGE_KEYS_FILE=" + c.file}, "keys", "check"); code != 0 || !strings.Contains(out, "loads: 2 keys") {
		t.Errorf("check of a good file: exit %d, %q %q", code, out, errOut)
	}
}

// The flag package stops at the first non-flag: edge keys takes flags on
// either side of the key id, and EDGE_KEYS_FILE through run's getenv.
func TestKeysCommandsTakeFlagsAroundTheID(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	env := mapEnv(map[string]string{"EDGE_KEYS_FILE": file, "EDGE_BRAND": "aurora"})
	keysRun := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(t.Context(), append([]string{"edge", "keys"}, args...), env, &out, io.Discard)
		return out.String(), err
	}
	out, err := keysRun("add", "--mode", "live", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"suspend", m.ID, "--file", file},
		{"resume", "--file", file, m.ID},
		{"suspend", "--", m.ID},
		{"resume", m.ID},
	} {
		if _, err := keysRun(args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"suspend"},
		{"suspend", m.ID, m.ID},
		{"list", "extra"},
		{"add", "--mode", "prod"},
		{"add", "--mode", "live", "--burst", "3"},
		{"add", "--mode", "live", "--expires", "yesterday"},
		{"frobnicate"},
		{},
	} {
		var ee *exitError
		if _, err := keysRun(args...); !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want a usage error (status 2)", args, err)
		}
	}
	if _, err := keysRun("suspend", "key_unknown"); err == nil || !strings.Contains(err.Error(), "no record with id key_unknown") {
		t.Errorf("suspend of an unknown id: %v", err)
	}
}
