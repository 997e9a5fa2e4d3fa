package mapping

import "testing"

// BenchmarkMapRaw: one record of the simulator's shape (an internal object
// beside the fields read) decoded and mapped.
func BenchmarkMapRaw(b *testing.B) {
	raw := record(set("internal", map[string]any{"owner": "Aurora Holdings GmbH", "cost_center": "CC-4410",
		"notes": "renovation 2024, wing B", "flags": []any{"a", "b"}}))
	opts := Options{Brand: "aurora", CodeSource: CodeSourceShortCode, Zones: &ZoneCache{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MapRaw(raw, opts); err != nil {
			b.Fatal(err)
		}
	}
}
