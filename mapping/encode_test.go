package mapping

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// reflectJSON is the representation as encoding/json writes it from the
// wire struct: the reference AppendJSON must equal byte for byte.
func reflectJSON(t testing.TB, p Property) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Object    string  `json:"object"`
		ID        string  `json:"id"`
		Name      string  `json:"name"`
		Code      *string `json:"code"`
		Status    string  `json:"status"`
		Timezone  string  `json:"timezone"`
		CreatedAt string  `json:"createdAt"`
		UpdatedAt string  `json:"updatedAt"`
	}{"property", p.ID, p.Name, p.Code, p.Status, p.Timezone,
		p.CreatedAt.UTC().Format(TimeFormat), p.UpdatedAt.UTC().Format(TimeFormat)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var encodeCases = []string{
	"", "Hotel Aurora", `quote " and \ backslash`, "<script>&amp;</script>",
	"tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f", "Zürich Straße 東京",
	"bad utf8 \xff\xfe end", "\xc3", "line\u2028sep\u2029para", "emoji 🏨",
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	times := []time.Time{
		time.Date(2024, 2, 29, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2030, 6, 1, 12, 0, 0, 5_000_000, time.FixedZone("x", 3600)),
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for i, s := range encodeCases {
		code := s
		p := Property{ID: s, Name: s, Code: &code, Status: StatusActive, Timezone: s,
			CreatedAt: times[i%len(times)], UpdatedAt: times[(i+1)%len(times)]}
		if i%2 == 0 {
			p.Code = nil
		}
		got, _ := p.MarshalJSON()
		if want := reflectJSON(t, p); !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range encodeCases {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, s string, ms int64) {
		tm := time.UnixMilli(ms)
		p := Property{ID: s, Name: s, Code: &s, Status: s, Timezone: s, CreatedAt: tm, UpdatedAt: tm}
		if got, want := p.AppendJSON(nil), reflectJSON(t, p); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}
