package edge

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
)

// mapping.AppendTime, the edge's one timestamp encoder (property fields,
// meta.timestamp, and problem bodies through problem.Writer.AppendTime),
// agrees with time.Format on the contract's layout, mapping.TimeFormat.
func TestAppendTimestamp(t *testing.T) {
	times := []time.Time{
		time.Date(2026, 11, 22, 9, 41, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", -5*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 5e8, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		times = append(times, time.Unix(r.Int64N(250000000000)-62135596800, r.Int64N(1e9)))
	}
	for _, tm := range times {
		if got, want := string(mapping.AppendTime(nil, tm)), tm.UTC().Format(mapping.TimeFormat); got != want {
			t.Fatalf("AppendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestRequestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := string(appendRequestID(nil))
		if len(id) != 28 || id[:4] != "req_" || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		for _, c := range id[4:] {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				t.Fatalf("id %q has %q", id, c)
			}
		}
		seen[id] = true
	}
}
