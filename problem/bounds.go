package problem

import (
	"fmt"
	"unicode/utf8"
)

// MaxErrors is the most errors entries a problem lists (docs/contract.md
// section 10); the detail then says how many were found in all.
const MaxErrors = 20

// Budgets, in bytes of encoded JSON, of the fields that may echo partner
// input. With MaxErrors entries the whole body stays under 8 KB whatever the
// request: 256 + 512 + 20 * (48 + 160 + ~60) + ~400 fixed is about 6.5 KB.
const (
	maxInstance    = 256
	maxDetail      = 512
	maxField       = 48
	maxFieldDetail = 160
)

// ellipsis marks a clipped string.
const ellipsis = "…"

// Clip returns s unchanged when its JSON encoding (without quotes) takes at
// most budget bytes, and otherwise its longest prefix that fits with an
// ellipsis appended. It never splits a UTF-8 sequence and runs in time
// linear in the prefix it keeps, so it is safe on any partner input.
func Clip(s string, budget int) string {
	used := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := jsonCost(r, size)
		if used+c > budget {
			return clipAt(s, i, used, budget)
		}
		used += c
		i += size
	}
	return s
}

// clipAt cuts s at i (which fits the budget) and backs off until the
// ellipsis fits too.
func clipAt(s string, i, used, budget int) string {
	for i > 0 && used+len(ellipsis) > budget {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		used -= jsonCost(r, size)
		i -= size
	}
	return s[:i] + ellipsis
}

// jsonCost is how many bytes encoding/json writes for one rune: control
// characters, <, >, &, U+2028, U+2029 and invalid bytes take six (\u0000 or
// \ufffd), " and \ two.
func jsonCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	case r == '"', r == '\\':
		return 2
	}
	return size
}

// bounded returns the errors to list (at most MaxErrors, each clipped) and
// the detail, which says how many problems were found when not all are
// listed. total is the count the caller found; it may exceed len(errs)
// when the caller stopped collecting early.
func bounded(detail string, errs []FieldError, total int) (string, []FieldError) {
	total = max(total, len(errs))
	if len(errs) > MaxErrors {
		errs = errs[:MaxErrors]
	}
	out := make([]FieldError, len(errs))
	for i, fe := range errs {
		out[i] = FieldError{Field: Clip(fe.Field, maxField), Code: fe.Code, Detail: Clip(fe.Detail, maxFieldDetail)}
	}
	if total > len(out) {
		detail = fmt.Sprintf("%s %d problems were found; the first %d are listed.", Clip(detail, maxDetail-64), total, len(out))
	}
	return Clip(detail, maxDetail), out
}
