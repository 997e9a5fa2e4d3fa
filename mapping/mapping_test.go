package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// baseID is the id of the record every case starts from.
const baseID = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"

// record returns the JSON of a valid aurora record, changed by mods.
func record(mods ...func(map[string]any)) []byte {
	m := map[string]any{
		"hotel_id":             baseID,
		"brand_code":           "aurora",
		"display_name":         "Aurora Berlin Mitte",
		"short_code":           "BERMI",
		"legacy_property_code": "DE-0042",
		"lifecycle":            "LIVE",
		"time_zone":            "Europe/Berlin",
		"created_at":           "2019-05-01T10:00:00+02:00",
		"last_modified_ms":     json.Number("1700000000123"),
	}
	for _, mod := range mods {
		mod(m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // plain values only
	}
	return b
}

// set sets a field; a json.Number or json.RawMessage value is written as is.
func set(k string, v any) func(map[string]any) { return func(m map[string]any) { m[k] = v } }

func del(k string) func(map[string]any) { return func(m map[string]any) { delete(m, k) } }

// property returns the Property of record(), changed by mods.
func property(mods ...func(*Property)) Property {
	p := Property{
		ID:        baseID,
		Name:      "Aurora Berlin Mitte",
		Status:    StatusActive,
		Timezone:  "Europe/Berlin",
		CreatedAt: time.Date(2019, 5, 1, 8, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC),
	}
	for _, mod := range mods {
		mod(&p)
	}
	return p
}

func ptr(s string) *string { return &s }

var aurora = Options{Brand: "aurora"}

type mapCase struct {
	name string
	raw  []byte
	opts *Options // nil: aurora, no code source
	// want is the result when reason is empty.
	want Property
	// reason is the expected rejection; rejectID the HotelID it carries.
	reason   Reason
	rejectID string
}

func ok(name string, raw []byte, want Property) mapCase {
	return mapCase{name: name, raw: raw, want: want}
}

func rejected(name string, raw []byte, reason Reason) mapCase {
	return mapCase{name: name, raw: raw, reason: reason, rejectID: baseID}
}

// idCases: hotel_id is lower-cased; anything but a 8-4-4-4-12 hex UUID is
// invalid_id.
func idCases() []mapCase {
	bad := func(name, id string) mapCase {
		c := rejected("id/"+name, record(set("hotel_id", id)), ReasonInvalidID)
		c.rejectID = id
		return c
	}
	missing := rejected("id/missing", record(del("hotel_id")), ReasonInvalidID)
	missing.rejectID = ""
	null := rejected("id/null", record(set("hotel_id", nil)), ReasonInvalidID)
	null.rejectID = ""
	return []mapCase{
		ok("id/lower-case kept", record(), property()),
		ok("id/legacy upper-case hex lower-cased", record(set("hotel_id", strings.ToUpper(baseID))), property()),
		ok("id/mixed case lower-cased", record(set("hotel_id", "3F2504e0-4F89-41d3-9A0C-0305e82C3301")), property()),
		ok("id/nil UUID shape accepted", record(set("hotel_id", "00000000-0000-0000-0000-000000000000")),
			property(func(p *Property) { p.ID = "00000000-0000-0000-0000-000000000000" })),
		bad("empty", ""),
		bad("too short", baseID[:35]),
		bad("too long", baseID+"0"),
		bad("no dashes", strings.ReplaceAll(baseID, "-", "")),
		bad("dashes moved", "3f2504e04-f89-41d3-9a0c-0305e82c3301"),
		bad("dash replaced by hex", "3f2504e0a4f89-41d3-9a0c-0305e82c3301"),
		bad("non-hex letter", "3f2504e0-4f89-41d3-9a0c-0305e82c330g"),
		bad("non-hex upper letter", "3F2504E0-4F89-41D3-9A0C-0305E82C330G"),
		bad("braces", "{"+baseID+"}"),
		bad("braces same length", "{f2504e0-4f89-41d3-9a0c-0305e82c330}"),
		bad("urn prefix", "urn:uuid:"+baseID),
		bad("leading space", " "+baseID[1:]),
		bad("trailing space", baseID+" "),
		bad("non-ASCII", "3f2504e0-4f89-41d3-9a0c-0305e82c33é"),
		bad("underscores", strings.ReplaceAll(baseID, "-", "_")),
		bad("legacy numeric id", "HTL-000123"),
		missing,
		null,
	}
}

// nameCases: display_name is trimmed; empty or white space is empty_name.
func nameCases() []mapCase {
	named := func(n string) Property { return property(func(p *Property) { p.Name = n }) }
	return []mapCase{
		ok("name/surrounding spaces trimmed", record(set("display_name", "  Aurora Berlin Mitte ")), property()),
		ok("name/tabs and newlines trimmed", record(set("display_name", "\tAurora Berlin Mitte\r\n")), property()),
		ok("name/unicode space trimmed", record(set("display_name", "\u00a0Aurora Berlin Mitte\u2003")), property()),
		ok("name/inner spaces kept", record(set("display_name", " Aurora  Berlin\tMitte ")), named("Aurora  Berlin\tMitte")),
		ok("name/non-ASCII kept", record(set("display_name", "Hôtel Zürich \"Nord\" & <Spa>")), named("Hôtel Zürich \"Nord\" & <Spa>")),
		rejected("name/empty", record(set("display_name", "")), ReasonEmptyName),
		rejected("name/spaces", record(set("display_name", "   ")), ReasonEmptyName),
		rejected("name/mixed white space", record(set("display_name", " \t\n\r\u00a0 ")), ReasonEmptyName),
		rejected("name/missing", record(del("display_name")), ReasonEmptyName),
		rejected("name/null", record(set("display_name", nil)), ReasonEmptyName),
	}
}

// codeCases: section 8, the source of code chosen by EDGE_CODE_SOURCE.
func codeCases() []mapCase {
	with := func(name string, src CodeSource, raw []byte, code *string) mapCase {
		return mapCase{name: "code/" + name, raw: raw, opts: &Options{Brand: "aurora", CodeSource: src},
			want: property(func(p *Property) { p.Code = code })}
	}
	return []mapCase{
		with("default (empty source) is null even with short_code", "", record(), nil),
		with("none is null even with short_code", CodeSourceNone, record(), nil),
		with("unknown source is null", CodeSource("display_name"), record(), nil),
		with("short_code", CodeSourceShortCode, record(), ptr("BERMI")),
		with("legacy_property_code", CodeSourceLegacyCode, record(), ptr("DE-0042")),
		with("short_code trimmed", CodeSourceShortCode, record(set("short_code", " BERMI\t")), ptr("BERMI")),
		with("short_code empty is null", CodeSourceShortCode, record(set("short_code", "")), nil),
		with("short_code white space is null", CodeSourceShortCode, record(set("short_code", "  \t")), nil),
		with("short_code null is null", CodeSourceShortCode, record(set("short_code", nil)), nil),
		with("short_code missing is null", CodeSourceShortCode, record(del("short_code")), nil),
		with("short_code null does not fall back to legacy", CodeSourceShortCode, record(set("short_code", nil)), nil),
		with("legacy empty is null", CodeSourceLegacyCode, record(set("legacy_property_code", "")), nil),
		with("legacy white space is null", CodeSourceLegacyCode, record(set("legacy_property_code", " ")), nil),
		with("legacy null is null", CodeSourceLegacyCode, record(set("legacy_property_code", nil)), nil),
		with("legacy missing is null", CodeSourceLegacyCode, record(del("legacy_property_code")), nil),
		with("legacy null does not fall back to short", CodeSourceLegacyCode, record(set("legacy_property_code", nil)), nil),
		with("none ignores legacy too", CodeSourceNone, record(set("short_code", nil)), nil),
	}
}

// statusCases: LIVE is active; every other value, known or new, inactive.
func statusCases() []mapCase {
	inactive := property(func(p *Property) { p.Status = StatusInactive })
	var cs []mapCase
	cs = append(cs, ok("status/LIVE", record(set("lifecycle", "LIVE")), property()))
	for _, v := range []string{"PRE_OPENING", "TEMP_CLOSED", "DEFLAGGED", "UNDER_RENOVATION", "SOLD",
		"live", "Live", " LIVE", "LIVE ", "LIVE_SOON", ""} {
		cs = append(cs, ok("status/"+v, record(set("lifecycle", v)), inactive))
	}
	cs = append(cs,
		ok("status/missing", record(del("lifecycle")), inactive),
		ok("status/null", record(set("lifecycle", nil)), inactive))
	return cs
}

// zoneCases: time_zone must load as an IANA zone.
func zoneCases() []mapCase {
	var cs []mapCase
	for _, z := range []string{"Europe/Berlin", "America/New_York", "America/Argentina/Buenos_Aires",
		"Asia/Kolkata", "Asia/Tokyo", "Australia/Sydney", "Pacific/Honolulu", "Pacific/Auckland",
		"Africa/Nairobi", "Atlantic/Reykjavik", "Etc/GMT-14", "UTC"} {
		cs = append(cs, ok("zone/"+z, record(set("time_zone", z)), property(func(p *Property) { p.Timezone = z })))
	}
	for _, z := range []string{"", "   ", "Local", "localtime", "posixrules", "right/UTC", "posix/Europe/Berlin",
		"Mars/Olympus", "Mars/Olympus_Mons", "../etc/passwd", "/etc/localtime", "/usr/share/zoneinfo/UTC",
		"Europe/../Europe/Berlin", "+02:00", "UTC+2", "europe/berlin", "Europe/Berlin ", "Europe/Berlin/",
		"Europe", "zone.tab", "Europe/Berlin\x00"} {
		cs = append(cs, rejected("zone/"+z, record(set("time_zone", z)), ReasonInvalidTimeZone))
	}
	return append(cs,
		rejected("zone/missing", record(del("time_zone")), ReasonInvalidTimeZone),
		rejected("zone/null", record(set("time_zone", nil)), ReasonInvalidTimeZone))
}

// createdCases: created_at to UTC, millisecond precision, from any offset.
func createdCases() []mapCase {
	at := func(name, text string, want time.Time) mapCase {
		// last_modified_ms missing: updatedAt follows, so both are checked.
		return ok("createdAt/"+name, record(set("created_at", text), del("last_modified_ms")),
			property(func(p *Property) { p.CreatedAt, p.UpdatedAt = want, want }))
	}
	utc := func(y int, mo time.Month, d, h, mi, s, ms int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ms*1e6, time.UTC)
	}
	var cs []mapCase
	cs = append(cs,
		at("+02:00", "2019-05-01T10:00:00+02:00", utc(2019, 5, 1, 8, 0, 0, 0)),
		at("-05:30", "2019-05-01T10:00:00-05:30", utc(2019, 5, 1, 15, 30, 0, 0)),
		at("+05:45", "2019-05-01T10:00:00+05:45", utc(2019, 5, 1, 4, 15, 0, 0)),
		at("Z", "2019-05-01T10:00:00Z", utc(2019, 5, 1, 10, 0, 0, 0)),
		at("+00:00", "2019-05-01T10:00:00+00:00", utc(2019, 5, 1, 10, 0, 0, 0)),
		at("-00:00", "2019-05-01T10:00:00-00:00", utc(2019, 5, 1, 10, 0, 0, 0)),
		at("offset crosses the year", "2019-01-01T01:00:00+05:00", utc(2018, 12, 31, 20, 0, 0, 0)),
		at("offset crosses a leap day", "2020-02-28T23:30:00-01:00", utc(2020, 2, 29, 0, 30, 0, 0)),
		at("1 fractional digit", "2019-05-01T10:00:00.5+02:00", utc(2019, 5, 1, 8, 0, 0, 500)),
		at("2 fractional digits", "2019-05-01T10:00:00.12Z", utc(2019, 5, 1, 10, 0, 0, 120)),
		at("3 fractional digits", "2019-05-01T10:00:00.123-05:30", utc(2019, 5, 1, 15, 30, 0, 123)),
		at("4 fractional digits truncated", "2019-05-01T10:00:00.1239Z", utc(2019, 5, 1, 10, 0, 0, 123)),
		at("5 fractional digits truncated", "2019-05-01T10:00:00.12399Z", utc(2019, 5, 1, 10, 0, 0, 123)),
		at("6 fractional digits truncated", "2019-05-01T10:00:00.123999+09:00", utc(2019, 5, 1, 1, 0, 0, 123)),
		at("7 fractional digits truncated", "2019-05-01T10:00:00.1239999Z", utc(2019, 5, 1, 10, 0, 0, 123)),
		at("8 fractional digits truncated", "2019-05-01T10:00:00.12399999Z", utc(2019, 5, 1, 10, 0, 0, 123)),
		at("9 fractional digits truncated, not rounded", "2019-05-01T10:00:00.999999999Z", utc(2019, 5, 1, 10, 0, 0, 999)),
		at("earliest year", "0001-01-01T00:00:00Z", utc(1, 1, 1, 0, 0, 0, 0)),
		at("latest instant", "9999-12-31T23:59:59.999Z", utc(9999, 12, 31, 23, 59, 59, 999)),
	)
	for name, text := range map[string]string{
		"empty":                       "",
		"date only":                   "2019-05-01",
		"no offset":                   "2019-05-01T10:00:00",
		"no offset with fraction":     "2019-05-01T10:00:00.123",
		"space for T":                 "2019-05-01 10:00:00Z",
		"garbage":                     "yesterday",
		"day-first legacy":            "01/05/2019 10:00",
		"epoch digits":                "1556697600",
		"month 13":                    "2019-13-01T10:00:00Z",
		"day 32":                      "2019-05-32T10:00:00Z",
		"hour 24":                     "2019-05-01T24:00:00Z",
		"offset without colon":        "2019-05-01T10:00:00+0200",
		"dot without digits":          "2019-05-01T10:00:00.Z",
		"trailing text":               "2019-05-01T10:00:00Z trailing",
		"year past 9999 in UTC":       "9999-12-31T23:30:00-01:00",
		"year before 0001 in UTC":     "0001-01-01T00:30:00+01:00",
		"year 0000":                   "0000-06-01T00:00:00Z",
		"leading white space":         " 2019-05-01T10:00:00Z",
		"offset name instead of +hh":  "2019-05-01T10:00:00 CEST",
		"numeric offset out of range": "2019-05-01T10:00:00+99:00",
	} {
		cs = append(cs, rejected("createdAt/"+name, record(set("created_at", text)), ReasonInvalidCreatedAt))
	}
	return append(cs,
		rejected("createdAt/missing", record(del("created_at")), ReasonInvalidCreatedAt),
		rejected("createdAt/null", record(set("created_at", nil)), ReasonInvalidCreatedAt))
}

// updatedCases: last_modified_ms to UTC; missing means createdAt.
func updatedCases() []mapCase {
	at := func(name string, n json.Number, want time.Time) mapCase {
		return ok("updatedAt/"+name, record(set("last_modified_ms", n)), property(func(p *Property) { p.UpdatedAt = want }))
	}
	created := property().CreatedAt
	var cs []mapCase
	cs = append(cs,
		at("integer", "1700000000123", time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC)),
		at("float with .0", "1700000000123.0", time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC)),
		at("float exponent", "1.700000000123e12", time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC)),
		at("float fraction truncated", "1700000000123.75", time.Date(2023, 11, 14, 22, 13, 20, 123e6, time.UTC)),
		at("zero", "0", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)),
		at("before 1970", "-1500", time.Date(1969, 12, 31, 23, 59, 58, 500e6, time.UTC)),
		at("earliest", "-62135596800000", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)),
		at("latest", "253402300799999", time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)),
		ok("updatedAt/missing equals createdAt", record(del("last_modified_ms")),
			property(func(p *Property) { p.UpdatedAt = created })),
		ok("updatedAt/null equals createdAt", record(set("last_modified_ms", nil)),
			property(func(p *Property) { p.UpdatedAt = created })),
	)
	for _, n := range []json.Number{"253402300800000", "-62135596800001", "9223372036854775807",
		"-9223372036854775808", "99999999999999999999", "2.6e14", "1e300", "-1e300"} {
		cs = append(cs, rejected("updatedAt/out of range "+string(n), record(set("last_modified_ms", n)), ReasonInvalidModified))
	}
	return cs
}

// brandCases: a record of another brand is dropped.
func brandCases() []mapCase {
	return []mapCase{
		ok("brand/own", record(set("brand_code", "aurora")), property()),
		rejected("brand/other", record(set("brand_code", "borealis")), ReasonOtherBrand),
		rejected("brand/other case", record(set("brand_code", "Aurora")), ReasonOtherBrand),
		rejected("brand/padded", record(set("brand_code", " aurora")), ReasonOtherBrand),
		rejected("brand/empty", record(set("brand_code", "")), ReasonOtherBrand),
		rejected("brand/missing", record(del("brand_code")), ReasonOtherBrand),
		{name: "brand/record of the option's brand", raw: record(set("brand_code", "borealis")),
			opts: &Options{Brand: "borealis"}, want: property()},
	}
}

// undecodableCases: not an object, or a mapped field of the wrong type.
func undecodableCases() []mapCase {
	bad := func(name, raw, id string) mapCase {
		return mapCase{name: "undecodable/" + name, raw: []byte(raw), reason: ReasonUndecodable, rejectID: id}
	}
	long := strings.Repeat("x", 100)
	return []mapCase{
		bad("empty input", "", ""),
		bad("null", "null", ""),
		bad("null with spaces", " \n null\t", ""),
		bad("array", `[{"hotel_id":"`+baseID+`"}]`, ""),
		bad("string", `"`+baseID+`"`, ""),
		bad("number", `42`, ""),
		bad("bool", `true`, ""),
		bad("truncated object", `{"hotel_id":"`+baseID+`","display_name":"A`, ""),
		bad("trailing data", string(record())+` {}`, ""),
		bad("hotel_id a number", string(record(set("hotel_id", 42))), "42"),
		bad("hotel_id an object", string(record(set("hotel_id", map[string]any{"v": baseID}))), `{"v":"`+baseID+`"}`), // its JSON text: one rejection per record
		bad("display_name a number", string(record(set("display_name", 7))), baseID),
		bad("display_name an array", string(record(set("display_name", []string{"A"}))), baseID),
		bad("brand_code a bool", string(record(set("brand_code", true))), baseID),
		bad("short_code a number", string(record(set("short_code", 5))), baseID),
		bad("legacy_property_code an object", string(record(set("legacy_property_code", map[string]any{}))), baseID),
		bad("lifecycle an array", string(record(set("lifecycle", []string{"LIVE"}))), baseID),
		bad("time_zone a number", string(record(set("time_zone", 2))), baseID),
		bad("created_at a number", string(record(set("created_at", 1556697600))), baseID),
		bad("last_modified_ms a word", string(record(set("last_modified_ms", "soon"))), baseID),
		bad("last_modified_ms a bool", string(record(set("last_modified_ms", true))), baseID),
		bad("last_modified_ms an object", string(record(set("last_modified_ms", map[string]any{"ms": 1}))), baseID),
		bad("upper-case id recovered as sent", string(record(set("hotel_id", strings.ToUpper(baseID)), set("lifecycle", 1))),
			strings.ToUpper(baseID)),
		bad("long id truncated to 64 bytes", string(record(set("hotel_id", long), set("lifecycle", 1))), long[:64]),
	}
}

// extraCases: fields the edge does not map, whatever their type, change
// nothing.
func extraCases() []mapCase {
	return []mapCase{
		ok("extra/internal object", record(set("internal", map[string]any{"owner_email": "x@y"})), property()),
		ok("extra/internal of another type", record(set("internal", "opaque")), property()),
		ok("extra/unknown fields of every type", record(set("geo", map[string]any{"lat": 1.5}), set("amenities", []string{"spa"}),
			set("pms_revision", 7001), set("rollout", true), set("note", nil)), property()),
	}
}

func allCases() []mapCase {
	var cs []mapCase
	for _, f := range []func() []mapCase{idCases, nameCases, codeCases, statusCases, zoneCases,
		createdCases, updatedCases, brandCases, undecodableCases, extraCases, tooLongCases} {
		cs = append(cs, f()...)
	}
	return cs
}

func TestMapRaw(t *testing.T) {
	for _, tc := range allCases() {
		t.Run(tc.name, func(t *testing.T) {
			opts := aurora
			if tc.opts != nil {
				opts = *tc.opts
			}
			got, err := MapRaw(tc.raw, opts)
			if tc.reason != "" {
				var rej *Rejection
				if !errors.As(err, &rej) {
					t.Fatalf("MapRaw = %+v, %v; want rejection %s", got, err, tc.reason)
				}
				if rej.Reason != tc.reason || rej.HotelID != tc.rejectID {
					t.Errorf("rejection = {%q %s}, want {%q %s}", rej.HotelID, rej.Reason, tc.rejectID, tc.reason)
				}
				if got != (Property{}) {
					t.Errorf("rejected record returned %+v, want the zero Property", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("MapRaw: %v", err)
			}
			assertProperty(t, got, tc.want)
		})
	}
}

// TestEveryReasonCovered fails when a Reason is added without a case.
func TestEveryReasonCovered(t *testing.T) {
	seen := map[Reason]bool{}
	for _, tc := range allCases() {
		seen[tc.reason] = true
	}
	for _, r := range Reasons {
		if !seen[r] {
			t.Errorf("no case is rejected for %s", r)
		}
	}
	if len(seen)-1 != len(Reasons) { // "" is the accepted cases
		t.Errorf("cases use reasons %v, Reasons is %v", seen, Reasons)
	}
	uniq := slices.Clone(Reasons)
	slices.Sort(uniq)
	if len(slices.Compact(uniq)) != len(Reasons) {
		t.Errorf("Reasons has duplicates: %v", Reasons)
	}
}

func assertProperty(t *testing.T, got, want Property) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Status != want.Status || got.Timezone != want.Timezone {
		t.Errorf("got %+v, want %+v", got, want)
	}
	switch {
	case got.Code == nil && want.Code == nil:
	case got.Code == nil || want.Code == nil || *got.Code != *want.Code:
		t.Errorf("code = %s, want %s", show(got.Code), show(want.Code))
	}
	for _, ts := range []struct {
		name      string
		got, want time.Time
	}{{"createdAt", got.CreatedAt, want.CreatedAt}, {"updatedAt", got.UpdatedAt, want.UpdatedAt}} {
		if !ts.got.Equal(ts.want) {
			t.Errorf("%s = %s, want %s", ts.name, ts.got.Format(time.RFC3339Nano), ts.want.Format(time.RFC3339Nano))
		}
		if ts.got.Location() != time.UTC {
			t.Errorf("%s is in %s, want UTC", ts.name, ts.got.Location())
		}
		if ts.got.Nanosecond()%1e6 != 0 {
			t.Errorf("%s = %s has sub-millisecond digits", ts.name, ts.got.Format(time.RFC3339Nano))
		}
	}
}

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return "\"" + *s + "\""
}

// TestMapRecord covers values that only a caller of Map, not JSON, can send.
func TestMapRecord(t *testing.T) {
	base := func() HotelRecord {
		rec, err := Decode(record())
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	got, err := Map(base(), aurora)
	if err != nil {
		t.Fatal(err)
	}
	assertProperty(t, got, property())
	for _, n := range []json.Number{"NaN", "Inf", "-Inf", "", "0x10", "abc"} {
		rec := base()
		rec.LastModifiedMS = &n
		var rej *Rejection
		if _, err := Map(rec, aurora); !errors.As(err, &rej) || rej.Reason != ReasonInvalidModified {
			t.Errorf("last_modified_ms %q: err = %v, want %s", n, err, ReasonInvalidModified)
		}
	}
	// The brand must match exactly, so an unset Brand maps only records that
	// have none.
	if _, err := Map(base(), Options{}); !isReason(err, ReasonOtherBrand) {
		t.Errorf("empty Options.Brand: err = %v, want %s", err, ReasonOtherBrand)
	}
	// The id is checked first: a bad id of another brand is invalid_id.
	rec := base()
	rec.HotelID, rec.BrandCode = "nope", "borealis"
	if _, err := Map(rec, aurora); !isReason(err, ReasonInvalidID) {
		t.Errorf("bad id and other brand: err = %v, want %s", err, ReasonInvalidID)
	}
}

func isReason(err error, r Reason) bool {
	var rej *Rejection
	return errors.As(err, &rej) && rej.Reason == r
}

func TestRejectionError(t *testing.T) {
	_, err := MapRaw(record(set("hotel_id", "HTL-7"), set("internal", map[string]any{"owner": "secret"})), aurora)
	if err == nil {
		t.Fatal("want a rejection")
	}
	if msg := err.Error(); !strings.Contains(msg, `"HTL-7"`) || !strings.Contains(msg, string(ReasonInvalidID)) || strings.Contains(msg, "secret") {
		t.Errorf("Error() = %q, want the id and the reason, no internal data", msg)
	}
}

func TestParseID(t *testing.T) {
	for in, want := range map[string]string{
		baseID:                                 baseID,
		strings.ToUpper(baseID):                baseID,
		"ABCDEF01-2345-6789-ABCD-EF0123456789": "abcdef01-2345-6789-abcd-ef0123456789",
	} {
		if got, ok := ParseID(in); !ok || got != want {
			t.Errorf("ParseID(%q) = %q, %v; want %q, true", in, got, ok, want)
		}
	}
	for _, in := range []string{"", baseID[:35], baseID + "a", strings.ReplaceAll(baseID, "-", ""),
		"{" + baseID[1:35] + "}", "3f2504e0-4f89-41d3-9a0c-0305e82c330G", "3f2504e0+4f89-41d3-9a0c-0305e82c3301"} {
		if got, ok := ParseID(in); ok || got != "" {
			t.Errorf("ParseID(%q) = %q, %v; want \"\", false", in, got, ok)
		}
	}
}

func TestParseCodeSource(t *testing.T) {
	for _, s := range []CodeSource{CodeSourceNone, CodeSourceShortCode, CodeSourceLegacyCode} {
		if got, err := ParseCodeSource(string(s)); err != nil || got != s {
			t.Errorf("ParseCodeSource(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "NONE", "Short_Code", "short-code", " short_code", "display_name", "internal"} {
		if got, err := ParseCodeSource(s); err == nil || got != "" {
			t.Errorf("ParseCodeSource(%q) = %q, %v; want an error", s, got, err)
		}
	}
}

// TestPropertyJSON pins the exact public representation.
func TestPropertyJSON(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    Property
		want string
	}{{
		name: "code null",
		p:    property(),
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Aurora Berlin Mitte","code":null,"status":"active","timezone":"Europe/Berlin","createdAt":"2019-05-01T08:00:00.000Z","updatedAt":"2023-11-14T22:13:20.123Z"}`,
	}, {
		name: "code set, inactive",
		p:    property(func(p *Property) { p.Code, p.Status = ptr("BERMI"), StatusInactive }),
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Aurora Berlin Mitte","code":"BERMI","status":"inactive","timezone":"Europe/Berlin","createdAt":"2019-05-01T08:00:00.000Z","updatedAt":"2023-11-14T22:13:20.123Z"}`,
	}, {
		name: "times in another zone with sub-millisecond digits are written in UTC, truncated",
		p: property(func(p *Property) {
			p.CreatedAt = time.Date(2020, 1, 1, 0, 30, 0, 987654321, berlin)
			p.UpdatedAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.FixedZone("", -5*3600-1800))
		}),
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Aurora Berlin Mitte","code":null,"status":"active","timezone":"Europe/Berlin","createdAt":"2019-12-31T23:30:00.987Z","updatedAt":"2020-01-01T05:30:00.000Z"}`,
	}, {
		name: "name escaped",
		p:    property(func(p *Property) { p.Name = `Hôtel "Nord" \ Spa` }),
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Hôtel \"Nord\" \\ Spa","code":null,"status":"active","timezone":"Europe/Berlin","createdAt":"2019-05-01T08:00:00.000Z","updatedAt":"2023-11-14T22:13:20.123Z"}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("json.Marshal =\n%s\nwant\n%s", got, tc.want)
			}
			ptrGot, err := json.Marshal(&tc.p)
			if err != nil || string(ptrGot) != tc.want {
				t.Errorf("json.Marshal(&p) = %s, %v", ptrGot, err)
			}
		})
	}
}

// TestMapRawJSON maps real records and pins the bytes a partner receives.
func TestMapRawJSON(t *testing.T) {
	tests := []struct {
		raw  []byte
		opts Options
		want string
	}{{
		raw: record(set("hotel_id", strings.ToUpper(baseID)), set("display_name", "\t Aurora Berlin Mitte  "),
			set("created_at", "2019-05-01T10:00:00.123456-05:30"), del("last_modified_ms"), set("lifecycle", "TEMP_CLOSED")),
		opts: aurora,
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Aurora Berlin Mitte","code":null,"status":"inactive","timezone":"Europe/Berlin","createdAt":"2019-05-01T15:30:00.123Z","updatedAt":"2019-05-01T15:30:00.123Z"}`,
	}, {
		raw:  record(set("time_zone", "Asia/Kolkata"), set("last_modified_ms", json.Number("1.5e12"))),
		opts: Options{Brand: "aurora", CodeSource: CodeSourceLegacyCode},
		want: `{"object":"property","id":"3f2504e0-4f89-41d3-9a0c-0305e82c3301","name":"Aurora Berlin Mitte","code":"DE-0042","status":"active","timezone":"Asia/Kolkata","createdAt":"2019-05-01T08:00:00.000Z","updatedAt":"2017-07-14T02:40:00.000Z"}`,
	}}
	for i, tc := range tests {
		p, err := MapRaw(tc.raw, tc.opts)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%d: json.Marshal =\n%s\nwant\n%s", i, got, tc.want)
		}
	}
}

// recordFieldNames are the PMS's field names; none may reach a partner.
var recordFieldNames = []string{"hotel_id", "brand_code", "display_name", "short_code",
	"legacy_property_code", "lifecycle", "time_zone", "created_at", "last_modified_ms", "internal"}

// TestNoInternalDataLeaks maps a record full of internal data, with every
// code source, and finds none of it in the public JSON.
func TestNoInternalDataLeaks(t *testing.T) {
	secrets := []string{"Zyxwv Holdings GmbH", "zz-owner@owners.pms.invalid", "CTR-2019-ZYX-0001",
		"DE89 3704 0044 0532 0130 00", "98765432.17", "13.5", "renegotiation pending", "gm-9911",
		"ROLLOUT_FLAG_QX", "amenity_qx", "pms-node-7.internal.example", "owner_legal_name", "bank_iban"}
	raw := record(
		set("internal", map[string]any{
			"owner_legal_name": secrets[0],
			"owner_email":      secrets[1],
			"contract_ref":     secrets[2],
			"bank_iban":        secrets[3],
			"revenue_eur":      json.Number(secrets[4]),
			"commission_pct":   json.Number(secrets[5]),
			"ops_notes":        secrets[6],
			"owner_contact":    map[string]any{"escalation": secrets[7]},
		}),
		set("rollout_flags", map[string]any{secrets[8]: true}),
		set("amenities", []string{secrets[9]}),
		set("served_by", secrets[10]),
	)
	for _, src := range []CodeSource{"", CodeSourceNone, CodeSourceShortCode, CodeSourceLegacyCode} {
		p, err := MapRaw(raw, Options{Brand: "aurora", CodeSource: src})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		assertNoLeak(t, string(out), secrets, recordFieldNames)
		// The in-memory value carries nothing either (it is what handlers see).
		assertNoLeak(t, strings.Join([]string{p.ID, p.Name, show(p.Code), p.Status, p.Timezone}, "|"), secrets, recordFieldNames)
	}
}

func assertNoLeak(t *testing.T, out string, values, names []string) {
	t.Helper()
	lower := strings.ToLower(out)
	for _, v := range values {
		if strings.Contains(out, v) {
			t.Errorf("output carries internal value %q: %s", v, out)
		}
	}
	for _, n := range names {
		if strings.Contains(lower, strings.ToLower(n)) {
			t.Errorf("output carries internal field name %q: %s", n, out)
		}
	}
}

// FuzzMapRaw: no input panics; a mapped Property always holds the
// contract's invariants and marshals to timestamps that parse back.
func FuzzMapRaw(f *testing.F) {
	f.Add(record())
	f.Add(record(set("hotel_id", strings.ToUpper(baseID)), set("display_name", "  x\t"), del("last_modified_ms")))
	f.Add(record(set("last_modified_ms", json.Number("1.700000000123e12")), set("lifecycle", "UNDER_RENOVATION")))
	f.Add(record(set("created_at", "2019-05-01T10:00:00.123456789-05:30"), set("time_zone", "UTC")))
	f.Add(record(set("created_at", "9999-12-31T23:30:00-01:00")))
	f.Add(record(set("time_zone", "localtime")))
	f.Add(record(set("last_modified_ms", json.Number("253402300800000"))))
	f.Add(record(set("display_name", 3)))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"hotel_id":"` + baseID + `","brand_code":"aurora","display_name":"\u00a0"}`))
	f.Add(record(set("internal", map[string]any{"hotel_id": "x", "pms_url": "http://10.0.0.1"}), set("extra", []any{1, "two"})))
	f.Add(record(set("short_code", "  "), set("legacy_property_code", "\u0000"), set("brand_code", "AURORA")))
	f.Add(record(set("hotel_id", 12), set("lifecycle", nil)))
	f.Add([]byte(`{"hotel_id":"` + baseID + `","hotel_id":"` + baseID + `"}`))
	f.Add([]byte(`{` + strings.Repeat(`"a":{`, 200) + strings.Repeat(`}`, 201)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, src := range []CodeSource{CodeSourceNone, CodeSourceShortCode, CodeSourceLegacyCode} {
			p, err := MapRaw(raw, Options{Brand: "aurora", CodeSource: src})
			if err != nil {
				var rej *Rejection
				if !errors.As(err, &rej) || !slices.Contains(Reasons, rej.Reason) || len(rej.HotelID) > 64 {
					t.Fatalf("error %v (%T) is not a *Rejection with a known reason", err, err)
				}
				continue
			}
			checkInvariants(t, p)
			checkPublicKeys(t, p)
		}
	})
}

// publicKeys are the fields of a property in the contract
// (docs/partner-api.md section 2.1): whatever the PMS sends, no other key, and so no
// internal field name, reaches the partner.
var publicKeys = []string{"object", "id", "name", "code", "status", "timezone", "createdAt", "updatedAt"}

func checkPublicKeys(t *testing.T, p Property) {
	t.Helper()
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("output %s does not decode: %v", out, err)
	}
	if len(m) != len(publicKeys) {
		t.Errorf("output has %d keys, want %d: %s", len(m), len(publicKeys), out)
	}
	for _, k := range publicKeys {
		if _, ok := m[k]; !ok {
			t.Errorf("output lacks %q: %s", k, out)
		}
	}
}

func checkInvariants(t *testing.T, p Property) {
	t.Helper()
	if id, ok := ParseID(p.ID); !ok || id != p.ID {
		t.Errorf("id %q is not a lower-case UUID", p.ID)
	}
	if p.Name == "" || strings.TrimSpace(p.Name) != p.Name {
		t.Errorf("name %q is empty or not trimmed", p.Name)
	}
	if p.Code != nil && (*p.Code == "" || strings.TrimSpace(*p.Code) != *p.Code) {
		t.Errorf("code %q is empty or not trimmed", *p.Code)
	}
	if p.Status != StatusActive && p.Status != StatusInactive {
		t.Errorf("status %q", p.Status)
	}
	if !validZone(p.Timezone) {
		t.Errorf("timezone %q does not load", p.Timezone)
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var w struct{ CreatedAt, UpdatedAt string }
	if err := json.Unmarshal(out, &w); err != nil {
		t.Fatalf("output %s does not decode: %v", out, err)
	}
	for _, ts := range []struct {
		text string
		want time.Time
	}{{w.CreatedAt, p.CreatedAt}, {w.UpdatedAt, p.UpdatedAt}} {
		if ts.want.Location() != time.UTC || ts.want.Nanosecond()%1e6 != 0 {
			t.Errorf("time %s is not UTC with millisecond precision", ts.want.Format(time.RFC3339Nano))
		}
		back, err := time.Parse(TimeFormat, ts.text)
		if err != nil || !back.Equal(ts.want) {
			t.Errorf("timestamp %q does not parse back to %s: %v", ts.text, ts.want.Format(time.RFC3339Nano), err)
		}
	}
}

// The zone memo changes no result and stays bounded.
func TestZoneCache(t *testing.T) {
	var zc ZoneCache
	for _, name := range []string{"Europe/Berlin", "Mars/Olympus", "", "Local", "Europe/Berlin", "Asia/Tokyo", "Mars/Olympus"} {
		if got, ok := zc.lookup([]byte(name)); got != name || ok != validZone(name) {
			t.Errorf("ZoneCache.lookup(%q) = %q %v, want %v", name, got, ok, validZone(name))
		}
	}
	if len(zc.known) != 5 {
		t.Errorf("remembered %d names, want 5", len(zc.known))
	}
	for i := range 2 * maxZones {
		zc.lookup([]byte(fmt.Sprintf("Nowhere/Zone%d", i)))
	}
	if len(zc.known) != maxZones {
		t.Errorf("memo grew to %d, bound is %d", len(zc.known), maxZones)
	}
	if _, ok := zc.lookup([]byte("America/Chicago")); !ok {
		t.Errorf("a valid zone past the bound was refused")
	}
}
