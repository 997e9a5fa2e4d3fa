package upstream

import (
	"encoding/json"
	"reflect"
)

// splitArray appends to dst the elements of the JSON array data, each a
// slice of data, as json.Unmarshal into []json.RawMessage would find them
// (without the white space around them), in one pass. data must be valid
// JSON, as encoding/json has checked it to be when it hands a value to an
// UnmarshalJSON method (Unmarshal validates its whole input first): the
// split then only finds where each element ends, instead of validating and
// decoding the same bytes twice more, which a list page's decoding spent
// most of its CPU on (the shadow candidate's paced walk, beside partners).
// A value that is not an array is the *json.UnmarshalTypeError json.Unmarshal
// gives.
func splitArray(dst []bodySlice, data []byte) ([]bodySlice, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return dst, &json.UnmarshalTypeError{Value: jsonKind(data, i), Type: reflect.TypeFor[[]bodySlice](), Offset: int64(i + 1)}
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return dst, nil
	}
	for i < len(data) {
		end := valueEnd(data, i)
		dst = append(dst, data[i:end])
		i = skipSpace(data, end)
		if i >= len(data) || data[i] == ']' {
			break
		}
		i = skipSpace(data, i+1) // past the comma
	}
	return dst, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index just past the valid JSON value starting at i.
func valueEnd(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = stringEnd(data, i) - 1 // at the closing quote
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 { // a number or a literal: up to the next delimiter
				for i < len(data) && !delimiter(data[i]) {
					i++
				}
				return i
			}
		}
	}
	return i
}

// stringEnd is the index just past the string whose opening quote is at i.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

func delimiter(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// jsonKind names the JSON value at i as json.UnmarshalTypeError does.
func jsonKind(data []byte, i int) string {
	if i >= len(data) {
		return "value"
	}
	switch c := data[i]; {
	case c == '{':
		return "object"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	default:
		return "number"
	}
}
