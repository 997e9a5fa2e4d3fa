package listener_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 17: a refused TLS reload says what was refused (the
// certificate, the key, or the pair that do not go together) and names
// the file, in the log line's refused and file fields and in its error.
func TestTLSReloadNamesRefusedFile(t *testing.T) {
	const garbageCert = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
	const garbageKey = "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n"
	other := filepath.Join(t.TempDir(), "other")
	testkit.WriteCertPair(t, other+".crt", other+".key", 3)
	otherCert, _ := os.ReadFile(other + ".crt")
	otherKey, _ := os.ReadFile(other + ".key")

	for _, tc := range []struct {
		name    string
		breakIt func(e *tlsEdge)
		refused string // "certificate", "key" or "pair"
		file    func(e *tlsEdge) string
	}{
		{"garbage certificate", func(e *tlsEdge) { testkit.ReplaceFile(t, e.certFile, []byte(garbageCert)) },
			"certificate", func(e *tlsEdge) string { return e.certFile }},
		{"certificate without PEM", func(e *tlsEdge) { testkit.ReplaceFile(t, e.certFile, []byte("nope")) },
			"certificate", func(e *tlsEdge) string { return e.certFile }},
		{"garbage key", func(e *tlsEdge) { testkit.ReplaceFile(t, e.keyFile, []byte(garbageKey)) },
			"key", func(e *tlsEdge) string { return e.keyFile }},
		{"key without PEM", func(e *tlsEdge) { testkit.ReplaceFile(t, e.keyFile, []byte("nope")) },
			"key", func(e *tlsEdge) string { return e.keyFile }},
		{"key file a link to /dev/zero", func(e *tlsEdge) {
			link := e.keyFile + ".link"
			if err := os.Symlink("/dev/zero", link); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(link, e.keyFile); err != nil {
				t.Fatal(err)
			}
		}, "key", func(e *tlsEdge) string { return e.keyFile }},
		{"certificate file removed", func(e *tlsEdge) {
			if err := os.Remove(e.certFile); err != nil {
				t.Fatal(err)
			}
		}, "certificate", func(e *tlsEdge) string { return e.certFile }},
		{"another pair's certificate", func(e *tlsEdge) { testkit.ReplaceFile(t, e.certFile, otherCert) },
			"pair", func(e *tlsEdge) string { return e.certFile }},
		{"another pair's key", func(e *tlsEdge) { testkit.ReplaceFile(t, e.keyFile, otherKey) },
			"pair", func(e *tlsEdge) string { return e.certFile }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := serveTLS(t, listener.ServeConfig{})
			tc.breakIt(e)
			e.reload <- struct{}{} // SIGHUP, besides the watch
			var lines []map[string]any
			e.untilLoaded(t, func() bool {
				lines = refusals(t, e.logs)
				return len(lines) > 0
			})
			for _, line := range lines {
				errText, _ := line["error"].(string)
				if line["refused"] != tc.refused || line["file"] != tc.file(e) || !strings.Contains(errText, tc.file(e)) {
					t.Errorf("refusal logged as refused=%v file=%v error=%q; want refused=%s file=%s named in the error",
						line["refused"], line["file"], errText, tc.refused, tc.file(e))
				}
			}
			if got := e.serial(t); got != 1 {
				t.Errorf("after a refused reload the edge serves serial %d, want 1", got)
			}
		})
	}
}

// refusals are the TLS reload failures logged so far, as JSON objects.
func refusals(t *testing.T, logs *testkit.LogBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		if msg, _ := line["msg"].(string); strings.HasPrefix(msg, "TLS certificate reload failed") {
			out = append(out, line)
		}
	}
	return out
}
