package mapping

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// diffOptions are the option sets the differential tests map with: every
// code source, with and without a zone cache, and a brand no record has.
func diffOptions() []Options {
	zones := &ZoneCache{}
	var opts []Options
	for _, src := range []CodeSource{"", CodeSourceShortCode, CodeSourceLegacyCode} {
		opts = append(opts,
			Options{Brand: "aurora", CodeSource: src},
			Options{Brand: "aurora", CodeSource: src, Zones: zones})
	}
	return append(opts, Options{Brand: "zenith", Zones: zones})
}

// sameResult reports how MapRaw's result differs from mapRawStd's (the
// encoding/json decode and Map), or "" when it does not.
func sameResult(got Property, gotErr error, want Property, wantErr error) string {
	var gr, wr *Rejection
	switch {
	case (gotErr == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, want %v", gotErr, wantErr)
	case gotErr != nil:
		if !errors.As(gotErr, &gr) || !errors.As(wantErr, &wr) || *gr != *wr {
			return fmt.Sprintf("error %#v, want %#v", gotErr, wantErr)
		}
		return ""
	}
	if g, w := got.AppendJSON(nil), want.AppendJSON(nil); !bytes.Equal(g, w) {
		return fmt.Sprintf("property %s, want %s", g, w)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) ||
		got.CreatedAt.Location() != time.UTC || got.UpdatedAt.Location() != time.UTC {
		return fmt.Sprintf("times %v %v, want %v %v", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	return ""
}

// fastSeeds are records the fast path must give up on or get right:
// duplicates, case, escapes, numbers in strings, type errors, nesting,
// trailing bytes, invalid UTF-8 and surrogates, offsets and fractions.
func fastSeeds() [][]byte {
	seeds := [][]byte{
		record(),
		record(set("internal", map[string]any{"owner": "secret", "rooms": []any{1, 2.5, nil, true, "x"}})),
		record(set("display_name", "  Caf\u00e9 <Mitte> & \"Spree\"\t")),
		record(set("last_modified_ms", json_n("1.7e12"))),
		record(set("last_modified_ms", json_n("-0"))),
		record(set("last_modified_ms", json_n("123456789012345678901"))),
		record(set("last_modified_ms", "1700000000123")),
		record(set("last_modified_ms", nil), set("short_code", nil), set("legacy_property_code", "  ")),
		record(set("created_at", "2019-05-01T10:00:00.123456789-09:30")),
		record(set("created_at", "2019-05-01t10:00:00z")),
		record(set("created_at", "2019-05-01T24:00:00Z")),
		record(set("created_at", "0000-12-31T23:00:00-01:00")),
		record(set("hotel_id", "3F2504E0-4F89-41D3-9A0C-0305E82C3301")),
		record(set("hotel_id", 7)),
		record(set("lifecycle", nil), set("time_zone", nil)),
		record(set("time_zone", "posix/Europe/Berlin")),
		[]byte(`{"hotel_id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","HOTEL_ID":"x","brand_code":"aurora"}`),
		[]byte(`{"hotel_id":"a","hotel_id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","brand_code":"aurora","display_name":"n","time_zone":"UTC","created_at":"2020-01-01T00:00:00Z"}`),
		[]byte(`{"hotel\u005fid":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","brand_code":"aurora"}`),
		[]byte(`{"\u017fhort_code":"K","brand_code":"aurora"}`),
		[]byte(`{"display_name":"\ud800x","brand_code":"aurora"}`),
		[]byte("{\"display_name\":\"\xff\",\"brand_code\":\"aurora\"}"),
		[]byte(`{"display_name":"a\u2028b\ud83d\ude00","brand_code":"aurora","x":1,"x":2}`),
		[]byte(` {} `), []byte(`{}{}`), []byte(`{} x`), []byte(`null`), []byte(`[]`), []byte(``),
		[]byte(`{"hotel_id":null}`), []byte(`{"brand_code":true}`), []byte(`{"a":[[[{}]]]}`),
	}
	for _, tc := range allCases() {
		seeds = append(seeds, tc.raw)
	}
	return seeds
}

func json_n(s string) any { return json.Number(s) }

// TestMapRawMatchesEncodingJSON holds MapRaw (the fast path, or its
// fallback) to the encoding/json path on every mapping case and the
// quirks above.
func TestMapRawMatchesEncodingJSON(t *testing.T) {
	for i, raw := range fastSeeds() {
		for _, o := range diffOptions() {
			got, gotErr := MapRaw(raw, o)
			want, wantErr := mapRawStd(raw, o)
			if d := sameResult(got, gotErr, want, wantErr); d != "" {
				t.Errorf("seed %d %q, options %+v: %s", i, raw, o, d)
			}
		}
	}
}

// TestMapRawFastPathTaken: a plain record takes the fast path, and the
// records only encoding/json can read give it up.
func TestMapRawFastPathTaken(t *testing.T) {
	for _, raw := range [][]byte{
		record(),
		record(set("internal", map[string]any{"owner": "secret"})),
		record(set("display_name", "Caf\u00e9 \"Spree\"")),
	} {
		if _, ok, _ := mapRawFastFor(raw, aurora, nil); !ok {
			t.Errorf("fast path gave up on %s", raw)
		}
	}
	for _, raw := range [][]byte{
		record(set("hotel_id", 7)), // a type error: the std path probes for the id
		record(set("last_modified_ms", "1700000000123")),
		[]byte(`{"Hotel_Id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301"}`),
		[]byte(`{"hotel_id":"a","hotel_id":"b"}`),
		[]byte(`{"hotel\u005fid":"a"}`),
		[]byte(`{} {}`),
		[]byte(`null`),
	} {
		if _, ok, _ := mapRawFastFor(raw, aurora, nil); ok {
			t.Errorf("fast path took %s", raw)
		}
	}
}

// FuzzMapRawMatchesEncodingJSON feeds the same bytes to MapRaw and to the
// encoding/json decode-and-map it replaced (mapRawStd); any difference in
// the property, its public JSON or the rejection fails.
func FuzzMapRawMatchesEncodingJSON(f *testing.F) {
	for _, raw := range fastSeeds() {
		f.Add(raw, uint8(0))
	}
	opts := diffOptions()
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		o := opts[int(which)%len(opts)]
		got, gotErr := MapRaw(raw, o)
		want, wantErr := mapRawStd(raw, o)
		if d := sameResult(got, gotErr, want, wantErr); d != "" {
			t.Fatalf("%q, options %+v: %s", raw, o, d)
		}
	})
}

// BenchmarkMapRaw: one record of the simulator's shape (an internal object
// beside the fields read), through MapRaw and through the encoding/json
// path it replaced.
func BenchmarkMapRaw(b *testing.B) {
	raw := record(set("internal", map[string]any{"owner": "Aurora Holdings GmbH", "cost_center": "CC-4410",
		"notes": "renovation 2024, wing B", "flags": []any{"a", "b"}}))
	opts := Options{Brand: "aurora", CodeSource: CodeSourceShortCode, Zones: &ZoneCache{}}
	for _, c := range []struct {
		name string
		fn   func([]byte, Options) (Property, error)
	}{{"fast", MapRaw}, {"encoding_json", mapRawStd}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn(raw, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMapRawKeepsNoRecord: the pooled decoder lets go of the bytes it
// read, so a record (or the page body it is a slice of) is not kept alive
// by the pool.
func TestMapRawKeepsNoRecord(t *testing.T) {
	d := fastDecoders.Get().(*fastDecoder)
	raw := record()
	if !d.scan(raw) {
		t.Fatal("fast path gave up on a plain record")
	}
	if u := d.dec.UnreadBuffer(); len(u) != 0 || d.in.Len() != 0 || d.dec.InputOffset() != 0 {
		t.Fatalf("decoder still reads the record: unread %q, input %d, offset %d", u, d.in.Len(), d.dec.InputOffset())
	}
	fastDecoders.Put(d)
}

// TestMapRawForMatchesMapRaw: MapRawFor maps or rejects every record as
// MapRaw does; a record it is told it wants comes back whole, one it is
// told it does not with the same id, and then without copying its name
// (the shadow candidate's walk of records the live PMS lacks).
func TestMapRawForMatchesMapRaw(t *testing.T) {
	wantAll := func(string) bool { return true }
	wantNone := func(string) bool { return false }
	for i, raw := range append(fastSeeds(), record(set("short_code", "SC-1"), set("legacy_property_code", "L-1"))) {
		for _, o := range diffOptions() {
			want, wantErr := MapRaw(raw, o)
			got, gotErr := MapRawFor(raw, o, wantAll)
			if d := sameResult(got, gotErr, want, wantErr); d != "" {
				t.Errorf("seed %d %q, options %+v, wanted: %s", i, raw, o, d)
			}
			got, gotErr = MapRawFor(raw, o, wantNone)
			if wantErr != nil {
				got = want // the error alone is compared
			}
			if d := sameResult(got, gotErr, got, wantErr); d != "" || got.ID != want.ID {
				t.Errorf("seed %d %q, options %+v, not wanted: %s (id %q, want %q)", i, raw, o, d, got.ID, want.ID)
			}
		}
	}
	raw := record(set("short_code", "SC-1"))
	opts := Options{Brand: "aurora", CodeSource: CodeSourceShortCode, Zones: &ZoneCache{}}
	if _, err := MapRawFor(raw, opts, wantNone); err != nil {
		t.Fatal(err)
	}
	if raceDetector {
		return // the counts below are the race detector's (it drops pooled decoders); go test without -race checks them
	}
	wanted := testing.AllocsPerRun(100, func() { _, _ = MapRawFor(raw, opts, wantAll) })
	refused := testing.AllocsPerRun(100, func() { _, _ = MapRawFor(raw, opts, wantNone) })
	if refused >= wanted || refused > 1 {
		t.Errorf("%.0f allocations for a record not wanted, %.0f wanted; want at most 1 (its id) and fewer", refused, wanted)
	}
}

// TestParseCreatedBytesMatchesParseCreated: Map and the fast path share
// mapView, so the differential tests above no longer compare the two
// readings of created_at; this holds time.Time.UnmarshalText's reading
// (parseCreatedBytes) to time.Parse's (parseCreated) on every case.
func TestParseCreatedBytesMatchesParseCreated(t *testing.T) {
	for _, tc := range createdCases() {
		rec, err := Decode(tc.raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, gotOK := parseCreatedBytes([]byte(rec.CreatedAt))
		want, wantOK := parseCreated(rec.CreatedAt)
		if gotOK != wantOK || !got.Equal(want) {
			t.Errorf("%s: parseCreatedBytes = %v %v, parseCreated = %v %v", tc.name, got, gotOK, want, wantOK)
		}
	}
}
