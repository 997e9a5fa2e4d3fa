package keys

import (
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newLogger returns a logger writing every level as text into a buffer
// safe for a Watch goroutine and the test at once.
func newLogger() (*slog.Logger, *testkit.LogBuffer) { return testkit.NewLogger() }

// seeded is a deterministic stand-in for crypto/rand.Reader.
func seeded(n uint64) *rand.ChaCha8 {
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], n)
	return rand.NewChaCha8(seed)
}

// minted mints a key for tests; edit may change its record.
func minted(t testing.TB, seed uint64, mode Mode, edit func(*Record)) (string, Record) {
	t.Helper()
	token, rec, err := Mint(seeded(seed), "aurora", mode, nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&rec)
	}
	return token, rec
}

// marshalFile renders records as a key file.
func marshalFile(t testing.TB, recs ...Record) []byte {
	t.Helper()
	if recs == nil {
		recs = []Record{}
	}
	b, err := json.MarshalIndent(File{Keys: recs}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes data to path in place.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// keyFile writes records to a fresh key file and returns its path.
func keyFile(t testing.TB, recs ...Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.json")
	writeFile(t, path, marshalFile(t, recs...))
	return path
}
