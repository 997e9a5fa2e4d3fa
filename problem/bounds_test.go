package problem_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in     string
		budget int
		want   string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"\x01\x01\x01", 12, "\x01…"}, // \u0001 is six bytes
		{"ééééé", 7, "éé…"},           // never splits a rune
		{"abc", 2, "…"},
		{"", 0, ""},
	} {
		got := problem.Clip(tc.in, tc.budget)
		if got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.budget, got, tc.want)
		}
		if !utf8.ValidString(got) && utf8.ValidString(tc.in) {
			t.Errorf("Clip(%q) split a rune: %q", tc.in, got)
		}
		enc, _ := json.Marshal(got)
		if len(enc)-2 > max(tc.budget, len(tc.in)) && got != tc.in {
			t.Errorf("Clip(%q, %d) encodes to %d bytes", tc.in, tc.budget, len(enc)-2)
		}
	}
}

// docs/contract.md section 10: at most 20 entries, the total in detail, and a
// body of a few KB whatever the request echoed.
func TestWriterBoundsAnswer(t *testing.T) {
	var errs []problem.FieldError
	for i := range 500 {
		errs = append(errs, problem.FieldError{Field: strings.Repeat("\x01", 1000) + fmt.Sprint(i),
			Code: problem.FieldUnknownParameter, Detail: strings.Repeat("<&>", 1000)})
	}
	long := "/v1/" + strings.Repeat("%01", 20000)
	r := httptest.NewRequest("GET", long, nil)
	w := httptest.NewRecorder()
	problem.Writer{Now: testkit.NewClock().Now}.Write(w, r, "req_1", &problem.Error{Code: problem.UnknownQueryParameter,
		Detail: strings.Repeat("\x02", 10000), Errors: errs, Total: 700})
	if n := w.Body.Len(); n >= 8<<10 {
		t.Fatalf("body is %d bytes, want < 8 KB", n)
	}
	var p struct {
		Detail   string               `json:"detail"`
		Instance string               `json:"instance"`
		Errors   []problem.FieldError `json:"errors"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) != problem.MaxErrors {
		t.Errorf("%d errors listed, want %d", len(p.Errors), problem.MaxErrors)
	}
	if !strings.Contains(p.Detail, "700 problems were found; the first 20 are listed.") {
		t.Errorf("detail does not give the total: %q", p.Detail)
	}
	if !strings.HasPrefix(p.Instance, "/v1/%01") || !strings.HasSuffix(p.Instance, "…") {
		t.Errorf("instance not clipped: %q", p.Instance)
	}

	// Twenty or fewer: all listed, detail untouched.
	w = httptest.NewRecorder()
	problem.Writer{Now: testkit.NewClock().Now}.Write(w, httptest.NewRequest("GET", "/v1/", nil), "req_1",
		&problem.Error{Code: problem.UnknownQueryParameter, Detail: "Some.", Errors: errs[:20]})
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	if len(p.Errors) != 20 || p.Detail != "Some." {
		t.Errorf("20 errors: listed %d, detail %q", len(p.Errors), p.Detail)
	}
}
