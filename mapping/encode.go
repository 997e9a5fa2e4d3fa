package mapping

import (
	"time"
	"unicode/utf8"
)

// TimeFormat is the contract's timestamp layout: UTC, milliseconds, Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// MarshalJSON writes the public representation (AppendJSON).
func (p Property) MarshalJSON() ([]byte, error) {
	return p.AppendJSON(make([]byte, 0, 256)), nil
}

// AppendJSON appends the public representation, in the field order of
// docs/partner-api.md section 2.1, byte for byte what encoding/json writes for it
// (HTML-safe string escaping), without reflection or a second compacting
// pass. Callers on the hot path encode once per PMS load and keep the
// bytes.
func (p Property) AppendJSON(b []byte) []byte {
	b = append(b, `{"object":"property","id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"name":`...)
	b = appendString(b, p.Name)
	b = append(b, `,"code":`...)
	if p.Code == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *p.Code)
	}
	b = append(b, `,"status":`...)
	b = appendString(b, p.Status)
	b = append(b, `,"timezone":`...)
	b = appendString(b, p.Timezone)
	b = append(b, `,"createdAt":"`...)
	b = AppendTime(b, p.CreatedAt)
	b = append(b, `","updatedAt":"`...)
	b = AppendTime(b, p.UpdatedAt)
	return append(b, `"}`...)
}

// AppendTime appends t in TimeFormat (UTC, milliseconds, Z) without
// time.Format's general machinery: the edge's one timestamp encoder, for
// property fields and every answer's meta.timestamp. Years outside
// 0000-9999 take time's general path (its output needs no JSON escaping
// either way).
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeFormat)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does
// with HTML escaping on (json.Marshal's default): '"' and '\\' escaped,
// \b \f \n \r \t short, other control bytes and < > & as \u00XX, invalid
// UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.

func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
