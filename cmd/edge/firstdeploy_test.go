package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// refusal is a run of the binary that must stop at start-up.
type refusal struct {
	stderr string
	code   int
}

// runToRefusal runs bin with args and env and waits up to 20 s for it to
// exit. An edge that serves instead (it logs "edge listening") is killed
// and the test fails: the start-up error was due.
func runToRefusal(t *testing.T, bin string, env []string, args ...string) refusal {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr := &testkit.LogBuffer{}
	cmd.Stderr, cmd.Stdout = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(testkit.EventuallyTimeout)
	for {
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if err == nil {
				t.Fatalf("exit 0, want a refusal; output:\n%s", stderr)
			}
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			return refusal{stderr: stderr.String(), code: ee.ExitCode()}
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			t.Fatalf("still running after 20 s, want a start-up error; output:\n%s", stderr)
		case <-time.After(20 * time.Millisecond): // outside event: the process exits or logs
			if strings.Contains(stderr.String(), `"msg":"edge listening"`) {
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("the edge started serving, want a start-up error; output:\n%s", stderr)
			}
		}
	}
}

// Acceptance (docs/contract.md section 21, operators' item 1): with
// PMS_BASE_URL empty, each deployment setting is a start-up error naming
// PMS_BASE_URL and the setting found, never the demo serving the
// simulator's hotels to the real key file. The misspelt PMS_BASEURL of a
// real first deployment is refused twice over: unknown, and the deployment
// settings beside it.
func TestDemoOnlyWithoutDeploymentSettings(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	keysFile, _ := keystest.Live(t, "aurora")
	base := []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR="}
	for _, tc := range []struct {
		name    string
		env     []string
		setting string // named in the error
	}{
		{"keys file", []string{"EDGE_KEYS_FILE=" + keysFile}, "EDGE_KEYS_FILE"},
		{"public URL", []string{"EDGE_PUBLIC_URL=https://api.aurora.example.com"}, "EDGE_PUBLIC_URL"},
		{"docs URL", []string{"EDGE_DOCS_URL=https://developer.aurora.example.com"}, "EDGE_DOCS_URL"},
		{"TLS", []string{"EDGE_TLS_CERT=/etc/edge/tls.crt", "EDGE_TLS_KEY=/etc/edge/tls.key"}, "EDGE_TLS_CERT"},
		{"Redis URL", []string{"EDGE_REDIS_URL=redis://127.0.0.1:1/0", "EDGE_FLEET_SECRET=" + testFleetSecret}, "EDGE_REDIS_URL"},
		{"Redis Sentinels", []string{"EDGE_REDIS_SENTINELS=127.0.0.1:1", "EDGE_REDIS_MASTER=m", "EDGE_FLEET_SECRET=" + testFleetSecret}, "EDGE_REDIS_SENTINELS"},
		{"Redis password", []string{"EDGE_REDIS_PASSWORD=secret"}, "EDGE_REDIS_PASSWORD"},
		{"OAuth", []string{"EDGE_OAUTH_ISSUER=https://idp.example.com/", "EDGE_OAUTH_AUDIENCE=https://api.aurora.example.com/v1"}, "EDGE_OAUTH_ISSUER"},
		{"PMS token", []string{"PMS_TOKEN=pms-secret-token"}, "PMS_TOKEN"},
		{"flag", []string{"--keys-file", keysFile}, "--keys-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, args := base, []string(nil)
			for _, e := range tc.env {
				if strings.HasPrefix(e, "--") || len(args) > 0 {
					args = append(args, e)
				} else {
					env = append(env, e)
				}
			}
			r := runToRefusal(t, bin, env, args...)
			if r.code != 1 || !strings.Contains(r.stderr, "PMS_BASE_URL") || !strings.Contains(r.stderr, tc.setting+" is set") {
				t.Errorf("exit %d, want 1 with an error naming PMS_BASE_URL and %s:\n%s", r.code, tc.setting, r.stderr)
			}
			if strings.Contains(r.stderr, "pms-secret-token") || strings.Contains(r.stderr, "secret\"") {
				t.Errorf("the error shows a secret:\n%s", r.stderr)
			}
		})
	}
	t.Run("misspelt PMS_BASE_URL", func(t *testing.T) {
		t.Parallel()
		env := append(base, "PMS_BASEURL=http://pms.internal:9000", "EDGE_KEYS_FILE="+keysFile,
			"EDGE_PUBLIC_URL=https://api.aurora.example.com", "PMS_TOKEN=pms-secret-token", "EDGE_BRAND=aurora")
		r := runToRefusal(t, bin, env)
		for _, want := range []string{"PMS_BASEURL: did you mean PMS_BASE_URL?"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("no %q in:\n%s", want, r.stderr)
			}
		}
	})
	// Nothing of a deployment: the demo still starts (README's first line;
	// its own settings: TestDemoRefusesDeploymentShapedEnvironment).
	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		p := startEdgeProc(t, bin, append(base, "EDGE_LOG_LEVEL=debug"))
		if !strings.Contains(p.stderr.String(), `"demo":true`) {
			t.Errorf("not the demo:\n%s", p.stderr)
		}
	})
}

// Acceptance (docs/contract.md section 21, operators' item 2): an EDGE_* or
// PMS_* variable the edge does not read stops the edge and every subcommand
// with an error naming it and the setting it probably meant; one that is
// near nothing is named alone. The settings of every command stay known.
func TestUnknownSettingsRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	keysFile, _ := keystest.Live(t, "aurora")
	deploy := []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=http://127.0.0.1:1", "EDGE_PUBLIC_URL=https://api.aurora.example.com"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"TLS cert file", append(deploy, "EDGE_TLS_CERT_FILE=/etc/edge/tls.crt"), nil,
			[]string{"EDGE_TLS_CERT_FILE: did you mean EDGE_TLS_CERT?"}},
		{"two at once", append(deploy, "EDGE_REDIS_ULR=redis://127.0.0.1:1/0", "PMS_SANBOX_URL=http://127.0.0.1:2"), nil,
			[]string{"EDGE_REDIS_ULR: did you mean EDGE_REDIS_URL?", "PMS_SANBOX_URL: did you mean PMS_SANDBOX_URL?"}},
		{"near nothing", append(deploy, "EDGE_FROBNICATE=1"), nil,
			[]string{"unknown setting EDGE_FROBNICATE"}},
		{"keys list", []string{"EDGE_KEYS_FLIE=" + keysFile}, []string{"keys", "list", "--file", keysFile},
			[]string{"EDGE_KEYS_FLIE: did you mean EDGE_KEYS_FILE?"}},
		{"pms check", []string{"PMS_BASE_URL=http://127.0.0.1:1", "EDGE_BRAND=aurora", "PMS_TOKNE=x"}, []string{"pms", "check"},
			[]string{"PMS_TOKNE: did you mean PMS_TOKEN?"}},
		{"docs build", []string{"EDGE_DOCS_ULR=https://developer.example.com"}, []string{"docs", "build", t.TempDir()},
			[]string{"EDGE_DOCS_ULR: did you mean EDGE_DOCS_URL?"}},
		{"help", []string{"EDGE_LOGLEVEL=debug"}, []string{"help"},
			[]string{"EDGE_LOGLEVEL: did you mean EDGE_LOG_LEVEL?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runToRefusal(t, bin, tc.env, tc.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1", r.code)
			}
			for _, want := range tc.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("no %q in:\n%s", want, r.stderr)
				}
			}
		})
	}
	// Every setting of the table is known, to each command: edge help
	// with all of them set (each to a harmless value) exits 0.
	t.Run("every setting known", func(t *testing.T) {
		t.Parallel()
		var env []string
		for _, st := range settingTable() {
			env = append(env, st.Env+"=x")
		}
		cmd := exec.Command(bin, "help")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("edge help with every setting set: %v\n%s", err, out)
		}
	})
}

// Operators' item 2, second half: EDGE_BRAND naming a brand no key of the
// key file has starts (keys may be added while the edge runs) with a
// warning that says so and names the brands the file has.
func TestBrandWithoutKeysWarns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	keysFile, _ := keystest.Live(t, "aurora")
	p := startEdgeProc(t, bin, []string{"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=nonexistent",
		"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=http://127.0.0.1:1", "EDGE_PUBLIC_URL=https://api.aurora.example.com"})
	log := p.stderr.String()
	if !strings.Contains(log, `"level":"WARN","msg":"no key in EDGE_KEYS_FILE belongs to EDGE_BRAND`) ||
		!strings.Contains(log, `"brand":"nonexistent","key_brands":["aurora"]`) {
		t.Errorf("no warning naming the brand and the file's brands:\n%s", log)
	}
}

// Acceptance (docs/contract.md section 21, operators' item 3): `edge keys`
// run as root on a key file of another user keeps the file's owner, group
// and mode, so the edge running as that user still reads it; and a lock
// file that is a symbolic link, even a dangling one, is refused without
// creating its target.
func TestKeysKeepOwnerAndRefuseLinkedLock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	t.Run("owner, group and mode", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("changing a file's owner needs root; CI runs as root")
			}
			t.Skip("needs root to give the key file another owner")
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "keys.json")
		if out, err := run(nil, "keys", "add", "--file", file, "--brand", "aurora", "--mode", "live"); err != nil {
			t.Fatalf("add: %v\n%s", err, out)
		}
		const uid, gid = 65532, 65533 // the edge's own user, as in the image
		if err := os.Chown(file, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(file, 0o640); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"keys", "add", "--file", file, "--brand", "aurora", "--mode", "test"},
			{"keys", "rotate", "--file", file, "--overlap", "1h", firstID(t, file)},
		} {
			if out, err := run(nil, args...); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != uid || st.Gid != gid || fi.Mode().Perm() != 0o640 {
				t.Errorf("after %v the key file is %d:%d %v, want %d:%d -rw-r-----", args[1], st.Uid, st.Gid, fi.Mode().Perm(), uid, gid)
			}
		}
		// The lock file, created by root, is the key file's user's too.
		if fi, err := os.Lstat(file + ".lock"); err != nil {
			t.Error(err)
		} else if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
			t.Errorf("the lock file is %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
		}
	})

	t.Run("lock file a symbolic link", func(t *testing.T) {
		t.Parallel()
		for _, dangling := range []bool{true, false} {
			dir := t.TempDir()
			file, target := filepath.Join(dir, "keys.json"), filepath.Join(dir, "elsewhere")
			if !dangling {
				if err := os.WriteFile(target, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, file+".lock"); err != nil {
				t.Fatal(err)
			}
			out, err := run(nil, "keys", "add", "--file", file, "--brand", "aurora", "--mode", "live")
			if err == nil || !strings.Contains(out, "symbolic link") {
				t.Errorf("dangling %v: %v, want a refusal naming the symbolic link:\n%s", dangling, err, out)
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("dangling %v: the key file was written (%v)", dangling, err)
			}
			if _, err := os.Lstat(target); dangling && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the link's target was created (%v)", err)
			}
		}
	})
}

// firstID is the id of the first record of the key file at path.
func firstID(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), `"id": "`)
	id, _, _ := strings.Cut(rest, `"`)
	if !ok || id == "" {
		t.Fatalf("no record in %s", b)
	}
	return id
}
