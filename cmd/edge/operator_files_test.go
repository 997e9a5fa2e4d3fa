package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 15, against the real edge binary:
// an operator file (TLS certificate, TLS key, key file) replaced by a link
// to /dev/zero or by a FIFO is refused like a malformed file: logged, the
// previous certificate and keys stay in force, memory stays small, later
// valid files still apply, and SIGTERM still ends the process within the
// shutdown timeout.
func TestOperatorFilesHostile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, _ := slowPMS(t, 0)
	for _, tc := range []struct {
		name    string
		target  string // "cert", "tlskey" or "keys"
		hostile string // "zero" or "fifo"
		refusal string // the log line of the refusal
	}{
		{"cert-link-to-dev-zero", "cert", "zero", "TLS certificate reload failed"},
		{"tls-key-link-to-dev-zero", "tlskey", "zero", "TLS certificate reload failed"},
		{"key-file-link-to-dev-zero", "keys", "zero", "keys reload failed"},
		{"key-file-fifo", "keys", "fifo", "keys reload failed"},
		{"tls-key-fifo", "tlskey", "fifo", "TLS certificate reload failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, tlsKeyFile, keysFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "keys.json")
			testkit.WriteCertPair(t, certFile, tlsKeyFile, 1)
			token, rec := keystest.Mint(t, "aurora", keys.ModeLive)
			keystest.Write(t, keysFile, rec)
			p := startEdgeProc(t, bin, []string{
				"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora",
				"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=" + pms.URL, "EDGE_DOCS_URL=" + testDocsURL, "PMS_TOKEN=pms-secret-token",
				"EDGE_TLS_CERT=" + certFile, "EDGE_TLS_KEY=" + tlsKeyFile, "EDGE_SHUTDOWN_TIMEOUT=2s",
			})
			if got := p.serial(t); got != 1 {
				t.Fatalf("serial %d at start", got)
			}
			if code := p.call(t, token); code != 200 {
				t.Fatalf("key at start: %d", code)
			}
			path := map[string]string{"cert": certFile, "tlskey": tlsKeyFile, "keys": keysFile}[tc.target]
			switch tc.hostile {
			case "zero":
				replaceBySymlink(t, path, "/dev/zero")
			case "fifo":
				replaceByFIFO(t, path)
			}
			// The watcher reads the file and refuses it (its log line is
			// the outside event waited for); SIGHUP asks again and is
			// refused again: both paths.
			p.waitLogs(t, tc.refusal, 1, 100<<20)
			_ = p.cmd.Process.Signal(syscall.SIGHUP)
			p.waitLogs(t, tc.refusal, 2, 100<<20)
			if rss := p.peakRSS(t); rss > 100<<20 {
				t.Errorf("peak RSS %d MB after the refusal; want under 100 MB", rss>>20)
			}
			if got := p.serial(t); got != 1 {
				t.Errorf("after the refusal the edge serves serial %d; want the old 1", got)
			}
			if code := p.call(t, token); code != 200 {
				t.Errorf("after the refusal the old key answers %d; want 200", code)
			}

			// A later valid file still applies.
			switch tc.target {
			case "cert", "tlskey":
				testkit.WriteCertPair(t, certFile, tlsKeyFile, 2)
				_ = p.cmd.Process.Signal(syscall.SIGHUP)
				testkit.Eventually(t, "the valid certificate after the refusal is served", func() bool { return p.serial(t) == 2 })
			case "keys":
				token2, rec2 := keystest.Mint(t, "aurora", keys.ModeLive)
				keystest.Write(t, keysFile, rec2)
				_ = p.cmd.Process.Signal(syscall.SIGHUP)
				testkit.Eventually(t, "the valid key file after the refusal is in force", func() bool { return p.call(t, token2) == 200 })
			}
			// SIGTERM ends the process within the shutdown timeout (2 s),
			// with a margin for a busy machine.
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.exited:
			case <-time.After(2*time.Second + 8*time.Second):
				t.Fatalf("still alive 10 s after SIGTERM (shutdown timeout 2 s); log:\n%s", p.stderr.String())
			}
		})
	}
}

// edgeBin is one edge process of a test.
type edgeBin struct {
	cmd            *exec.Cmd
	addr           string
	stdout, stderr *testkit.LogBuffer
	exited         chan struct{}
}

// startEdgeProc starts bin with env and waits until it listens; the process
// is killed when t ends.
func startEdgeProc(t *testing.T, bin string, env []string) *edgeBin {
	t.Helper()
	p := &edgeBin{cmd: exec.Command(bin), stdout: &testkit.LogBuffer{}, stderr: &testkit.LogBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() { // the process's own account of what it did
			t.Logf("edge log:\n%s", p.stderr.String())
		}
	})
	p.addr = waitListening(t, &started{stderr: p.stderr})
	return p
}

// serial is the serial number of the certificate the edge presents.
func (p *edgeBin) serial(t *testing.T) int64 {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", p.addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("handshake: %v\n%s", err, p.stderr.String())
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// call is the status of a list request with key over TLS.
func (p *edgeBin) call(t *testing.T, key string) int {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", p.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(conn, "GET /v1/properties?perPage=1 HTTP/1.1\r\nHost: edge\r\nAuthorization: Bearer %s\r\nUser-Agent: e2e/1.0\r\nConnection: close\r\n\r\n", key)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	f := strings.Fields(line)
	if len(f) < 2 {
		t.Fatalf("status line %q", line)
	}
	code, _ := strconv.Atoi(f[1])
	return code
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func (p *edgeBin) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the process status: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// waitLogs waits up to 20 s for msg to be logged n times; the process is
// killed and the test fails at once when its peak RSS passes maxRSS
// meanwhile.
func (p *edgeBin) waitLogs(t *testing.T, msg string, n int, maxRSS int64) {
	t.Helper()
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for strings.Count(p.stderr.String(), msg) < n {
		if rss := p.peakRSS(t); rss > maxRSS {
			_ = p.cmd.Process.Kill()
			t.Fatalf("peak RSS reached %d MB before %q was logged; killed", rss>>20, msg)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged within %v; log:\n%s", msg, testkit.EventuallyTimeout, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // outside event: the edge process logging msg
	}
}

// replaceBySymlink atomically replaces path by a symbolic link to target.
func replaceBySymlink(t *testing.T, path, target string) {
	t.Helper()
	tmp := path + ".link"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// replaceByFIFO atomically replaces path by a named pipe nobody writes to.
func replaceByFIFO(t *testing.T, path string) {
	t.Helper()
	tmp := path + ".fifo"
	if err := syscall.Mkfifo(tmp, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
