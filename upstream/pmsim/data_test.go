package pmsim

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"
)

type rawRecord struct {
	HotelID     string          `json:"hotel_id"`
	BrandCode   string          `json:"brand_code"`
	DisplayName string          `json:"display_name"`
	ShortCode   *string         `json:"short_code"`
	Legacy      *string         `json:"legacy_property_code"`
	Lifecycle   string          `json:"lifecycle"`
	TimeZone    *string         `json:"time_zone"`
	CreatedAt   string          `json:"created_at"`
	Modified    *int64          `json:"last_modified_ms"`
	Internal    json.RawMessage `json:"internal"`
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// unmappable tells why a record breaks a rule of docs/pms-api.md
// section 6, independently of the edge's mapping package.
func unmappable(r rawRecord) string {
	switch {
	case !uuidRE.MatchString(r.HotelID):
		return "id"
	case strings.TrimSpace(r.DisplayName) == "":
		return "name"
	case r.TimeZone == nil:
		return "no zone"
	}
	if _, err := time.LoadLocation(*r.TimeZone); err != nil || *r.TimeZone == "" || *r.TimeZone == "Local" {
		return "bad zone"
	}
	if _, err := time.Parse(time.RFC3339Nano, r.CreatedAt); err != nil {
		return "created_at"
	}
	return ""
}

// TestDataIsMessy proves the generated data carries every kind of drift the
// edge must cope with, in every brand.
func TestDataIsMessy(t *testing.T) {
	sim := New(Config{Seed: 42})
	for _, brand := range sim.Brands() {
		t.Run(brand, func(t *testing.T) {
			seen := map[string]int{}
			reasons := map[string]int{}
			instants := map[int64]int{}
			var created []time.Time
			for _, raw := range sim.Records(brand) {
				var r rawRecord
				if err := json.Unmarshal(raw, &r); err != nil {
					t.Fatalf("record is not JSON: %v: %s", err, raw)
				}
				var all map[string]json.RawMessage
				_ = json.Unmarshal(raw, &all)
				for _, extra := range []string{"amenities", "pms_revision", "geo", "rollout_flags"} {
					if _, ok := all[extra]; ok {
						seen["extra "+extra]++
					}
				}
				if r.BrandCode != brand {
					t.Fatalf("brand_code %q in %s", r.BrandCode, brand)
				}
				if why := unmappable(r); why != "" {
					reasons[why]++
					if r.Lifecycle != "LIVE" {
						t.Errorf("unmappable record not LIVE: %s", raw)
					}
					continue
				}
				seen["lifecycle "+r.Lifecycle]++
				if r.HotelID != strings.ToLower(r.HotelID) {
					seen["upper-case id"]++
				}
				if r.DisplayName != strings.TrimSpace(r.DisplayName) {
					seen["padded name"]++
				}
				for f, v := range map[string]*string{"short_code": r.ShortCode, "legacy_property_code": r.Legacy} {
					switch {
					case v == nil:
						seen[f+" null"]++
					case *v == "":
						seen[f+" empty"]++
					default:
						seen[f+" set"]++
					}
				}
				for _, suffix := range []string{"+02:00", "-05:00", "Z"} {
					if strings.HasSuffix(r.CreatedAt, suffix) {
						seen["offset "+suffix]++
					}
				}
				if strings.Contains(r.CreatedAt, ".") {
					seen["fractional seconds"]++
				}
				if r.Modified == nil {
					seen["no last_modified_ms"]++
				}
				ts, _ := time.Parse(time.RFC3339Nano, r.CreatedAt)
				created = append(created, ts)
				instants[ts.UnixNano()]++
				var in map[string]any
				if err := json.Unmarshal(r.Internal, &in); err != nil {
					t.Fatalf("internal: %v", err)
				}
				for _, name := range InternalFieldNames()[1:] {
					if _, ok := in[name]; !ok {
						t.Fatalf("internal lacks %s: %s", name, r.Internal)
					}
				}
				if !strings.Contains(string(r.Internal), LeakMarker) {
					t.Fatalf("internal lacks the leak marker: %s", r.Internal)
				}
				zone := strings.SplitN(*r.TimeZone, "/", 2)[0]
				seen["region "+zone]++
			}
			for _, want := range []string{
				"lifecycle LIVE", "lifecycle PRE_OPENING", "lifecycle TEMP_CLOSED", "lifecycle DEFLAGGED", "lifecycle UNDER_RENOVATION",
				"upper-case id", "padded name", "short_code null", "short_code empty", "short_code set",
				"legacy_property_code null", "legacy_property_code empty", "legacy_property_code set",
				"offset +02:00", "offset -05:00", "offset Z", "fractional seconds", "no last_modified_ms",
				"region Europe", "region America", "region Asia",
				"extra amenities", "extra geo", "extra rollout_flags",
			} {
				if seen[want] == 0 {
					t.Errorf("no record with %s (seen %v)", want, seen)
				}
			}
			if seen["lifecycle LIVE"] <= seen["lifecycle PRE_OPENING"]+seen["lifecycle TEMP_CLOSED"] {
				t.Errorf("LIVE is not the most common lifecycle: %v", seen)
			}
			total := 0
			for _, n := range reasons {
				total += n
			}
			if total != Unmappable(40) || len(reasons) != 5 {
				t.Errorf("unmappable records %v, want %d covering 5 reasons", reasons, Unmappable(40))
			}
			shared := 0
			for _, n := range instants {
				if n > 1 {
					shared++
				}
			}
			if shared == 0 {
				t.Error("no two records share a created_at")
			}
			if slices.IsSortedFunc(created, func(a, b time.Time) int { return a.Compare(b) }) {
				t.Error("served order is sorted by created_at; the PMS's order should not be")
			}
		})
	}
}
