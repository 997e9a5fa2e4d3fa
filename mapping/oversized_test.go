package mapping

import (
	"errors"
	"strings"
	"testing"
)

// tooLongCases: a name over 256 characters or a code over 64 makes the
// record unmappable (docs/contract.md section 15); at the maximum, counted in characters
// (not bytes), it maps.
func tooLongCases() []mapCase {
	shortCode := &Options{Brand: "aurora", CodeSource: CodeSourceShortCode}
	name256 := strings.Repeat("é", 256) // 512 bytes, 256 characters
	code64 := strings.Repeat("ß", 64)
	return []mapCase{
		{name: "name of 257 characters", raw: record(set("display_name", strings.Repeat("a", 257))), reason: ReasonTooLong, rejectID: baseID},
		{name: "name of 7 MB", raw: record(set("display_name", strings.Repeat("x", 7<<20))), reason: ReasonTooLong, rejectID: baseID},
		{name: "code of 65 characters", raw: record(set("short_code", strings.Repeat("C", 65))), opts: shortCode, reason: ReasonTooLong, rejectID: baseID},
		ok("name of 256 characters", record(set("display_name", name256)), property(func(p *Property) { p.Name = name256 })),
		{name: "code of 64 characters", raw: record(set("short_code", code64)), opts: shortCode, want: property(func(p *Property) { p.Code = &code64 })},
		// An unused code source field is never looked at.
		ok("long unused code", record(set("legacy_property_code", strings.Repeat("L", 100))), property()),
	}
}

// docs/contract.md section 15: a 7 MB PMS name is never mapped (so never served);
// the rejection's reason is too_long.
func TestOversizedFieldsRejected(t *testing.T) {
	for _, tc := range tooLongCases() {
		opts := aurora
		if tc.opts != nil {
			opts = *tc.opts
		}
		got, err := MapRaw(tc.raw, opts)
		var rej *Rejection
		switch {
		case tc.reason != "" && (!errors.As(err, &rej) || rej.Reason != tc.reason):
			t.Errorf("%s: %d-byte name mapped (%v); want rejected %s", tc.name, len(got.Name), err, tc.reason)
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason == "":
			assertProperty(t, got, tc.want)
		}
	}
}
