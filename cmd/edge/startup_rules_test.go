package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// The start-up rules of docs/contract.md section 22, each through the
// built binary: the platform's variables, the demo's narrow environment,
// settings that cannot be right, key file modes, TLS files and the key
// life cycle.

// serviceLinks are the variables Kubernetes gives every pod of a namespace
// holding Services named pms (port http, 80/TCP), edge (https, 443/TCP) and
// edge-admin (9090/TCP): shaped like settings of the edge, and none of them
// one.
var serviceLinks = []string{
	"PMS_SERVICE_HOST=10.96.0.10", "PMS_SERVICE_PORT=80", "PMS_SERVICE_PORT_HTTP=80",
	"PMS_PORT=tcp://10.96.0.10:80", "PMS_PORT_80_TCP=tcp://10.96.0.10:80",
	"PMS_PORT_80_TCP_PROTO=tcp", "PMS_PORT_80_TCP_PORT=80", "PMS_PORT_80_TCP_ADDR=10.96.0.10",
	"EDGE_SERVICE_HOST=10.96.0.11", "EDGE_SERVICE_PORT=443", "EDGE_SERVICE_PORT_HTTPS=443",
	"EDGE_PORT=tcp://10.96.0.11:443", "EDGE_PORT_443_TCP=tcp://10.96.0.11:443",
	"EDGE_PORT_443_TCP_PROTO=tcp", "EDGE_PORT_443_TCP_PORT=443", "EDGE_PORT_443_TCP_ADDR=10.96.0.11",
	"EDGE_ADMIN_SERVICE_HOST=10.96.0.12", "EDGE_ADMIN_SERVICE_PORT=9090",
	"EDGE_ADMIN_PORT=tcp://10.96.0.12:9090", "EDGE_ADMIN_PORT_9090_TCP_ADDR=10.96.0.12",
}

// deployEnv is a deployment's environment against pms with keysFile, the
// admin listener off.
func deployEnv(pms, keysFile string) []string {
	return []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + pms, "PMS_TOKEN=pms-secret-token", "EDGE_PUBLIC_URL=https://api.aurora.example.com"}
}

// propertiesStatus is the status of a list request with key on the plain
// HTTP edge p.
func propertiesStatus(t *testing.T, p *edgeBin, key string) int {
	t.Helper()
	res, body := get(t, "http://"+p.addr+"/v1/properties?perPage=1", "Authorization", "Bearer "+key, "User-Agent", "startup-test/1.0")
	if res.StatusCode != 200 && res.StatusCode != 401 {
		t.Errorf("list: %d %s", res.StatusCode, body)
	}
	return res.StatusCode
}

// Acceptance 2 (section 22, "the platform's variables are not settings"):
// with the service-link variables of Services named pms, edge and
// edge-admin in its environment, the edge starts and serves, and edge
// --help and edge keys list run. A variable of that name shape whose value
// is no service link's (EDGE_ADMIN_PORT=9090, meant as EDGE_ADMIN_ADDR)
// is still an unknown setting.
func TestServiceLinkVariablesStartAndServe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, _ := slowPMS(t, 0)
	keysFile, key := keystest.Live(t, "aurora")
	p := startEdgeProc(t, bin, append(deployEnv(pms.URL, keysFile), serviceLinks...))
	if code := propertiesStatus(t, p, key); code != 200 {
		t.Errorf("list with the key: %d, want 200", code)
	}
	for _, args := range [][]string{{"--help"}, {"keys", "list", "--file", keysFile}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"EDGE_KEYS_FILE=" + keysFile}, serviceLinks...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("edge %s with service links: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	r := runToRefusal(t, bin, append(deployEnv(pms.URL, keysFile), "EDGE_ADMIN_PORT=9090"))
	if !strings.Contains(r.stderr, "unknown setting EDGE_ADMIN_PORT") {
		t.Errorf("EDGE_ADMIN_PORT=9090 not refused as unknown:\n%s", r.stderr)
	}
}

// Acceptance 2 (section 22, "the demo runs only when nothing but its
// listeners and logs is set"): the issue's deployment-shaped environment
// without PMS_BASE_URL is refused naming PMS_BASE_URL and every setting
// found; each of EDGE_BRAND, EDGE_FLEET_SECRET and PMS_CANDIDATE_URL alone
// too; the demo's own settings (listeners, logs, access log, traces) still
// start it.
func TestDemoRefusesDeploymentShapedEnvironment(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	base := []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR="}
	for _, tc := range []struct {
		name  string
		env   []string
		named []string
	}{
		{"deployment-shaped", []string{"EDGE_ADDR=0.0.0.0:0", "EDGE_BRAND=aurora", "EDGE_FLEET_SECRET=" + testFleetSecret,
			"EDGE_TRUSTED_PROXIES=10.0.0.0/8", "PMS_CANDIDATE_URL=http://pms-next.internal"},
			[]string{"EDGE_BRAND", "EDGE_FLEET_SECRET", "EDGE_TRUSTED_PROXIES", "PMS_CANDIDATE_URL"}},
		{"brand", []string{"EDGE_BRAND=aurora"}, []string{"EDGE_BRAND"}},
		{"fleet secret", []string{"EDGE_FLEET_SECRET=" + testFleetSecret}, []string{"EDGE_FLEET_SECRET"}},
		{"candidate", []string{"PMS_CANDIDATE_URL=http://pms-next.internal"}, []string{"PMS_CANDIDATE_URL"}},
		{"cache TTL", []string{"EDGE_CACHE_TTL=1m"}, []string{"EDGE_CACHE_TTL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runToRefusal(t, bin, slices.Concat(base, tc.env))
			for _, s := range tc.named {
				if !strings.Contains(r.stderr, s+" is set but PMS_BASE_URL is not") {
					t.Errorf("no error naming %s and PMS_BASE_URL:\n%s", s, r.stderr)
				}
			}
			if strings.Contains(r.stderr, testFleetSecret) {
				t.Errorf("the error shows the fleet secret:\n%s", r.stderr)
			}
		})
	}
	t.Run("the demo's own settings", func(t *testing.T) {
		t.Parallel()
		p := startEdgeProc(t, bin, slices.Concat(base, []string{"EDGE_LOG_LEVEL=debug", "EDGE_LOG_FORMAT=json", "EDGE_ACCESS_LOG=stderr",
			"EDGE_ACCESS_LOG_SAMPLE=0.5", "EDGE_TRACE_SLOW=2s"}))
		if !strings.Contains(p.stderr.String(), `"demo":true`) {
			t.Errorf("not the demo:\n%s", p.stderr)
		}
	})
}

// Acceptance 2 (section 22, "settings that cannot be right"):
// EDGE_PUBLIC_URL and EDGE_DOCS_URL ending in /v1 are refused naming the
// setting and the URL to set; a malformed EDGE_PUBLIC_URL is called
// invalid, not missing.
func TestURLSettingsThatCannotBeRight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	keysFile, _ := keystest.Live(t, "aurora")
	deploy := deployEnv("http://127.0.0.1:1", keysFile)[:6] // without EDGE_PUBLIC_URL
	for _, tc := range []struct {
		name, setting string
		want          []string
		notWant       string
	}{
		{"public URL ending /v1", "EDGE_PUBLIC_URL=https://api.aurora.example.com/v1",
			[]string{`invalid EDGE_PUBLIC_URL "https://api.aurora.example.com/v1"`, "without /v1, which the edge adds itself: https://api.aurora.example.com\n"}, ""},
		{"public URL ending /partners/v1/", "EDGE_PUBLIC_URL=https://aurora.example.com/partners/v1/",
			[]string{"invalid EDGE_PUBLIC_URL", "itself: https://aurora.example.com/partners\n"}, ""},
		{"docs URL ending /v1", "EDGE_DOCS_URL=https://developer.aurora.example.com/v1",
			[]string{"invalid EDGE_DOCS_URL", "itself: https://developer.aurora.example.com\n"}, ""},
		{"malformed public URL", "EDGE_PUBLIC_URL=api.aurora.example.com",
			[]string{`invalid EDGE_PUBLIC_URL "api.aurora.example.com"`}, "is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runToRefusal(t, bin, slices.Concat(deploy, []string{tc.setting}))
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("no %q in:\n%s", w, r.stderr)
				}
			}
			if tc.notWant != "" && strings.Contains(r.stderr, tc.notWant) {
				t.Errorf("%q in:\n%s", tc.notWant, r.stderr)
			}
		})
	}
}

// Acceptance 2 (section 22): a key file writable by others (0666), or in
// a directory writable by others, stops start-up naming the file and the
// mode; one readable by others (0644) starts with a WARN naming them; on
// reload a file of mode 0666 is refused and the keys in force stay (its
// new key is not taken), until the mode is fixed.
func TestKeyFileModes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, _ := slowPMS(t, 0)
	chmod := func(t *testing.T, path string, mode os.FileMode) {
		t.Helper()
		if err := os.Chmod(path, mode); err != nil { // exact, whatever the umask
			t.Fatal(err)
		}
	}
	t.Run("0666 refused at start", func(t *testing.T) {
		t.Parallel()
		keysFile, _ := keystest.Live(t, "aurora")
		chmod(t, keysFile, 0o666)
		r := runToRefusal(t, bin, deployEnv(pms.URL, keysFile))
		if r.code != 1 || !strings.Contains(r.stderr, "key file "+keysFile+" has mode 0666") {
			t.Errorf("exit %d, want 1 naming %s and mode 0666:\n%s", r.code, keysFile, r.stderr)
		}
	})
	t.Run("directory 0777 refused at start", func(t *testing.T) {
		t.Parallel()
		keysFile, _ := keystest.Live(t, "aurora")
		chmod(t, filepath.Dir(keysFile), 0o777)
		r := runToRefusal(t, bin, deployEnv(pms.URL, keysFile))
		if r.code != 1 || !strings.Contains(r.stderr, keysFile) || !strings.Contains(r.stderr, "0777") {
			t.Errorf("exit %d, want 1 naming %s and its directory's mode 0777:\n%s", r.code, keysFile, r.stderr)
		}
	})
	t.Run("0644 warned", func(t *testing.T) {
		t.Parallel()
		keysFile, key := keystest.Live(t, "aurora")
		chmod(t, keysFile, 0o644)
		p := startEdgeProc(t, bin, deployEnv(pms.URL, keysFile))
		if code := propertiesStatus(t, p, key); code != 200 {
			t.Errorf("list with the key: %d, want 200", code)
		}
		warn := `"level":"WARN","msg":"key file ` + keysFile + ` has mode 0644: readable by others`
		if !strings.Contains(p.stderr.String(), warn) {
			t.Errorf("no %s in:\n%s", warn, p.stderr)
		}
	})
	t.Run("0666 refused on reload, keys in force stay", func(t *testing.T) {
		t.Parallel()
		oldKey, oldRec := keystest.Mint(t, "aurora", keys.ModeLive)
		newKey, newRec := keystest.Mint(t, "aurora", keys.ModeLive)
		keysFile := keystest.File(t, oldRec)
		p := startEdgeProc(t, bin, deployEnv(pms.URL, keysFile))
		if code := propertiesStatus(t, p, oldKey); code != 200 {
			t.Fatalf("the key at start: %d", code)
		}
		// The new file, already 0666, replaces the old one in one rename:
		// no reload ever sees it with another mode.
		b, err := json.Marshal(map[string]any{"keys": []keys.Record{oldRec, newRec}})
		if err != nil {
			t.Fatal(err)
		}
		next := keysFile + ".next"
		if err := os.WriteFile(next, b, 0o600); err != nil {
			t.Fatal(err)
		}
		chmod(t, next, 0o666)
		if err := os.Rename(next, keysFile); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
		p.waitLogs(t, "keys reload failed", 1, 1<<30)
		if log := p.stderr.String(); !strings.Contains(log, "key file "+keysFile+" has mode 0666") {
			t.Errorf("the reload failure does not name the file and its mode:\n%s", log)
		}
		if code := propertiesStatus(t, p, oldKey); code != 200 {
			t.Errorf("the key in force: %d after the refused reload, want 200", code)
		}
		if code := propertiesStatus(t, p, newKey); code != 401 {
			t.Errorf("the key of the refused file: %d, want 401", code)
		}
		chmod(t, keysFile, 0o600)
		_ = p.cmd.Process.Signal(syscall.SIGHUP)
		testkit.Eventually(t, "the new key works once the mode is fixed", func() bool {
			return propertiesStatus(t, p, newKey) == 200
		})
	})
}

// Acceptance 2 (section 22): a TLS file that cannot be read names its
// setting and stops start-up before any listener opens. The public
// address is taken by another socket: were the listeners bound first, the
// error would be that one.
func TestTLSFilesNamedBeforeListeners(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	keysFile, _ := keystest.Live(t, "aurora")
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	testkit.WriteCertPair(t, cert, key, 1)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name, cert, key, setting, file string
	}{
		{"no certificate", filepath.Join(dir, "missing.crt"), key, "EDGE_TLS_CERT", filepath.Join(dir, "missing.crt")},
		{"certificate a directory", dir, key, "EDGE_TLS_CERT", dir},
		{"no key", cert, filepath.Join(dir, "missing.key"), "EDGE_TLS_KEY", filepath.Join(dir, "missing.key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := append(deployEnv("http://127.0.0.1:1", keysFile)[2:], "EDGE_ADDR="+taken.Addr().String(),
				"EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_TLS_CERT="+tc.cert, "EDGE_TLS_KEY="+tc.key)
			r := runToRefusal(t, bin, env)
			if r.code != 1 || !strings.Contains(r.stderr, tc.setting+": ") || !strings.Contains(r.stderr, tc.file) {
				t.Errorf("exit %d, want 1 naming %s and %s:\n%s", r.code, tc.setting, tc.file, r.stderr)
			}
			if strings.Contains(r.stderr, "cannot listen") || strings.Contains(r.stderr, "edge starting") {
				t.Errorf("a listener was bound before the TLS files were read:\n%s", r.stderr)
			}
		})
	}
}

// Acceptance 2 (section 22, key life cycle): rotating a key that already
// has a successor is refused without --force, naming the successor, and
// leaves the file as it was; --force rotates it. A lock file with another
// hard link is refused like a symbolic link, and the file it is a name of
// keeps its owner and content.
func TestKeysRotateTwiceAndLinkedLock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	t.Run("rotate twice", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "keys.json")
		if out, err := run("keys", "add", "--file", file, "--brand", "aurora", "--mode", "live"); err != nil {
			t.Fatalf("add: %v\n%s", err, out)
		}
		id := firstID(t, file)
		out, err := run("keys", "rotate", "--file", file, "--json", id)
		if err != nil {
			t.Fatalf("first rotate: %v\n%s", err, out)
		}
		var succ struct{ ID string }
		_, line, _ := strings.Cut(out, "{") // the JSON line among the notes of stderr
		line, _, _ = strings.Cut(line, "\n")
		if err := json.Unmarshal([]byte("{"+line), &succ); err != nil || succ.ID == "" {
			t.Fatalf("rotate --json: %q", out)
		}
		before, _ := os.ReadFile(file)
		out, err = run("keys", "rotate", "--file", file, id)
		if err == nil || !strings.Contains(out, succ.ID) || !strings.Contains(out, "--force") {
			t.Errorf("second rotate: %v, want a refusal naming the successor %s and --force:\n%s", err, succ.ID, out)
		}
		if after, _ := os.ReadFile(file); !bytes.Equal(before, after) {
			t.Errorf("the refused rotation changed the key file")
		}
		if out, err := run("keys", "rotate", "--file", file, "--force", id); err != nil {
			t.Errorf("rotate --force: %v\n%s", err, out)
		}
	})
	t.Run("lock file with another link", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		file, other := filepath.Join(dir, "keys.json"), filepath.Join(dir, "precious")
		if err := os.WriteFile(other, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(other, file+".lock"); err != nil {
			t.Fatal(err)
		}
		out, err := run("keys", "add", "--file", file, "--brand", "aurora", "--mode", "live")
		if err == nil || !strings.Contains(out, "lock file "+file+".lock has 2 links") {
			t.Errorf("add with a hard-linked lock file: %v, want a refusal naming its links:\n%s", err, out)
		}
		if _, err := os.Stat(file); err == nil {
			t.Errorf("the key file was written")
		}
		if b, _ := os.ReadFile(other); string(b) != "precious" {
			t.Errorf("the linked file now holds %q", b)
		}
	})
}
