package pmscheck

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// The census names a drift's cause with the records affected: a renamed
// field is missing where another of its type appeared (the PMS's own
// extensions of other types are not taken for it), a retyped one is
// counted record by record, and a healthy PMS shows none.
func TestCensusNamesTheCause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift pmsim.Drift
		want  func(n int) []Drift
	}{
		{"healthy", pmsim.Drift{}, func(int) []Drift { return nil }},
		{"rename display_name", pmsim.Drift{Rename: map[string]string{"display_name": "name"}}, func(n int) []Drift {
			return []Drift{{Field: "display_name", Change: "missing", Records: n, Appeared: []Field{{Name: "name", Records: n}}}}
		}},
		{"retype hotel_id", pmsim.Drift{Retype: []string{"hotel_id"}}, func(n int) []Drift {
			return []Drift{{Field: "hotel_id", Change: "retyped", Records: n, Types: []string{"object"}, Want: "string"}}
		}},
		{"retype last_modified_ms", pmsim.Drift{Retype: []string{"last_modified_ms"}}, func(int) []Drift {
			// Records whose last_modified_ms is null keep it null.
			n := 0
			for _, raw := range pmsim.New(pmsim.Config{Seed: 7}).Records("aurora") {
				var r struct {
					LastModifiedMS *int64 `json:"last_modified_ms"`
				}
				if json.Unmarshal(raw, &r) == nil && r.LastModifiedMS != nil {
					n++
				}
			}
			return []Drift{{Field: "last_modified_ms", Change: "retyped", Records: n, Types: []string{"string"}, Want: "integer or null"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCensus(mapping.CodeSourceNone)
			recs := pmsim.New(pmsim.Config{Seed: 7, Drift: tc.drift}).Records("aurora")
			for _, raw := range recs {
				c.Add(raw)
			}
			got := c.Drift()
			for i := range got {
				got[i].Message = ""
			}
			if want := tc.want(len(recs)); !slices.EqualFunc(got, want, func(a, b Drift) bool {
				return a.Field == b.Field && a.Change == b.Change && a.Records == b.Records && a.Want == b.Want &&
					slices.Equal(a.Types, b.Types) && slices.Equal(a.Appeared, b.Appeared)
			}) {
				t.Errorf("drift %+v, want %+v (of %d records)", got, want, len(recs))
			}
		})
	}
}

// A PMS that sends a new field name in every record grows the census by
// at most maxUnknownFields names.
func TestCensusBounded(t *testing.T) {
	c := NewCensus(mapping.CodeSourceNone)
	for i := range 10_000 {
		c.Add([]byte(`{"hotel_id":"x","f` + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26)) + `":1}`))
	}
	if len(c.fields) > len(recordFields)+maxUnknownFields {
		t.Errorf("%d field names kept", len(c.fields))
	}
}
