package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSplitArrayMatchesEncodingJSON: splitArray finds the elements
// json.Unmarshal into []json.RawMessage finds, byte for byte, in arrays of
// every kind of value (nested, strings holding brackets, quotes and
// escapes, numbers and literals at the end of the array, white space
// everywhere), and refuses what is not an array as json.Unmarshal does.
func TestSplitArrayMatchesEncodingJSON(t *testing.T) {
	elems := []string{`{"hotel_id":"a","n":[1,{"x":"]}"}]}`, `"s\"],{"`, `"\\"`, `""`, `-1.5e+3`, `0`, `true`, `false`,
		`null`, `[]`, `{}`, `[[],[{}],"]"]`, `{"a":"\u005d\\\""}`, `"é ☃"`}
	var cases []string
	for i := range elems {
		for j := range elems {
			cases = append(cases, "["+elems[i]+","+elems[j]+"]", " [ "+elems[i]+" ,\n\t"+elems[j]+" \r\n] ")
		}
		cases = append(cases, "["+elems[i]+"]", "[\n"+elems[i]+"\n]")
	}
	cases = append(cases, `[]`, ` [ ] `, "[\n]", "["+strings.Join(elems, ",")+"]")
	for _, c := range cases {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		got, err := splitArray(nil, []byte(c))
		if err != nil || fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("%s: split %q (%v), want %q", c, got, err, want)
		}
	}
	for _, c := range []string{`{"a":1}`, `"[]"`, `12`, `true`, ` {}`} {
		var want []json.RawMessage
		wantErr := json.Unmarshal([]byte(c), &want)
		_, err := splitArray(nil, []byte(c))
		var te, wte *json.UnmarshalTypeError
		if !errors.As(err, &te) || !errors.As(wantErr, &wte) || te.Value != wte.Value {
			t.Errorf("%s: error %v, want %v", c, err, wantErr)
		}
	}
}
