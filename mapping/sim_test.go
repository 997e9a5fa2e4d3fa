package mapping_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// TestSimulatorData maps every record the simulator generates, with every
// code source: each maps or is rejected for a known reason, the unmappable
// share is what the simulator promises, and the public JSON of all of them
// carries no internal value and no internal field name.
func TestSimulatorData(t *testing.T) {
	const perBrand = 40 // pmsim's default
	sim := pmsim.New(pmsim.Config{Seed: 1})
	forbidden := append([]string{pmsim.LeakMarker}, pmsim.InternalFieldNames()...)
	forbidden = append(forbidden, "hotel_id", "brand_code", "display_name", "short_code",
		"legacy_property_code", "lifecycle", "time_zone", "created_at", "last_modified_ms")

	brands := sim.Brands()
	if len(brands) == 0 {
		t.Fatal("simulator has no brands")
	}
	for _, brand := range brands {
		recs := sim.Records(brand)
		if len(recs) != perBrand {
			t.Fatalf("%s: %d records, want %d", brand, len(recs), perBrand)
		}
		for _, src := range []mapping.CodeSource{mapping.CodeSourceNone, mapping.CodeSourceShortCode, mapping.CodeSourceLegacyCode} {
			opts := mapping.Options{Brand: brand, CodeSource: src}
			var mapped []mapping.Property
			reasons := map[mapping.Reason]int{}
			statuses := map[string]int{}
			codes := 0
			for _, raw := range recs {
				p, err := mapping.MapRaw(raw, opts)
				if err != nil {
					var rej *mapping.Rejection
					if !errors.As(err, &rej) || !slices.Contains(mapping.Reasons, rej.Reason) {
						t.Fatalf("%s/%s: error %v is not a known rejection", brand, src, err)
					}
					reasons[rej.Reason]++
					continue
				}
				if id, ok := mapping.ParseID(p.ID); !ok || id != p.ID {
					t.Errorf("%s: id %q not a lower-case UUID", brand, p.ID)
				}
				if !strings.Contains(string(raw), `"hotel_id":"`+p.ID+`"`) &&
					!strings.Contains(string(raw), `"hotel_id":"`+strings.ToUpper(p.ID)+`"`) {
					t.Errorf("%s: id %q is not the record's hotel_id", brand, p.ID)
				}
				statuses[p.Status]++
				if p.Code != nil {
					codes++
				}
				mapped = append(mapped, p)
			}
			rejectedN := 0
			for r, n := range reasons {
				if r == mapping.ReasonOtherBrand || r == mapping.ReasonUndecodable {
					t.Errorf("%s/%s: %d records rejected as %s", brand, src, n, r)
				}
				rejectedN += n
			}
			if want := pmsim.Unmappable(perBrand); rejectedN != want || len(mapped) != perBrand-want {
				t.Errorf("%s/%s: %d rejected (%v), %d mapped; want %d rejected", brand, src, rejectedN, reasons, len(mapped), want)
			}
			if statuses[mapping.StatusActive] == 0 || statuses[mapping.StatusInactive] == 0 {
				t.Errorf("%s: statuses %v, want both", brand, statuses)
			}
			if src == mapping.CodeSourceNone && codes != 0 {
				t.Errorf("%s: %d codes with source none", brand, codes)
			}
			if src != mapping.CodeSourceNone && (codes == 0 || codes == len(mapped)) {
				t.Errorf("%s/%s: %d of %d have a code; the data has both set and empty sources", brand, src, codes, len(mapped))
			}

			out, err := json.Marshal(mapped)
			if err != nil {
				t.Fatal(err)
			}
			lower := strings.ToLower(string(out))
			for _, f := range forbidden {
				if strings.Contains(lower, strings.ToLower(f)) {
					t.Errorf("%s/%s: public JSON carries %q", brand, src, f)
				}
			}
		}
	}
}

// TestSimulatorOtherBrand: a deployment of one brand drops every record of
// the others (records with a bad id still count as invalid_id).
func TestSimulatorOtherBrand(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 1, Brands: 2})
	brands := sim.Brands()
	for _, raw := range sim.Records(brands[1]) {
		_, err := mapping.MapRaw(raw, mapping.Options{Brand: brands[0]})
		var rej *mapping.Rejection
		if !errors.As(err, &rej) || (rej.Reason != mapping.ReasonOtherBrand && rej.Reason != mapping.ReasonInvalidID) {
			t.Errorf("record of %s mapped for %s: %v", brands[1], brands[0], err)
		}
	}
}
