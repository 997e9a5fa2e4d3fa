package mapping

import (
	"encoding/json"
	"time"
)

// TimeFormat is the contract's timestamp layout: UTC, milliseconds, Z.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// wireProperty is the public representation, in the field order of
// docs/partner-api.md section 2.1.
type wireProperty struct {
	Object    string  `json:"object"`
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Code      *string `json:"code"`
	Status    string  `json:"status"`
	Timezone  string  `json:"timezone"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
}

// MarshalJSON writes the public representation (encoding/json, HTML-safe
// string escaping; timestamps in TimeFormat). Callers on the hot path
// encode once per PMS load and keep the bytes (upstream.NewItem).
func (p Property) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireProperty{"property", p.ID, p.Name, p.Code, p.Status, p.Timezone,
		string(AppendTime(nil, p.CreatedAt)), string(AppendTime(nil, p.UpdatedAt))})
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
