package keys

import (
	"path/filepath"
	"strings"
	"testing"
)

// docs/contract.md section 15: a key's rateLimit that the limiter
// cannot represent (perSecond 1e-9: a bucket that would take decades to
// refill) rejects the key file, at start-up and on reload, never "no
// limit".
func TestUnrepresentableKeyRateRejected(t *testing.T) {
	for _, rl := range []map[string]any{
		{"perSecond": 1e-9, "burst": 1},
		{"perSecond": 1e-6, "burst": 1000000},
	} {
		r := goodRecord()
		r["rateLimit"] = rl
		_, err := Parse(fileOf(t, r))
		if err == nil || !strings.Contains(err.Error(), "perSecond") {
			t.Errorf("rateLimit %v: %v; want the key file rejected naming perSecond", rl, err)
		}
	}
	r := goodRecord()
	r["rateLimit"] = map[string]any{"perSecond": 1e-3, "burst": 1}
	if _, err := Parse(fileOf(t, r)); err != nil {
		t.Errorf("perSecond 1e-3: %v", err)
	}

	// Through the store: Open refuses it; a reload to it keeps the old keys.
	path := filepath.Join(t.TempDir(), "keys.json")
	_, good := minted(t, 1, ModeLive, nil)
	writeFile(t, path, marshalFile(t, good))
	log, buf := newLogger()
	s, err := Open(path, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	_, tiny := minted(t, 2, ModeLive, func(r *Record) { r.RateLimit = &RateLimit{PerSecond: 1e-9, Burst: 1} })
	writeFile(t, path, marshalFile(t, good, tiny))
	if err := s.Reload(); err == nil || s.Len() != 1 || !strings.Contains(buf.String(), "keys reload failed") {
		t.Errorf("reload to perSecond 1e-9: %v, %d keys; want rejected, 1 key kept, logged", err, s.Len())
	}
	if _, err := Open(path, Options{}); err == nil {
		t.Errorf("Open of a key file with perSecond 1e-9 succeeded")
	}
}
