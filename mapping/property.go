package mapping

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	_ "time/tzdata" // time zones must load the same on every machine
)

// CodeSource names the record field the public code comes from.
type CodeSource string

const (
	CodeSourceNone       CodeSource = "none"
	CodeSourceShortCode  CodeSource = "short_code"
	CodeSourceLegacyCode CodeSource = "legacy_property_code"
)

// ParseCodeSource accepts the values of EDGE_CODE_SOURCE.
func ParseCodeSource(s string) (CodeSource, error) {
	switch cs := CodeSource(s); cs {
	case CodeSourceNone, CodeSourceShortCode, CodeSourceLegacyCode:
		return cs, nil
	}
	return "", fmt.Errorf("want none, short_code or legacy_property_code")
}

// Options configure Map.
type Options struct {
	// Brand is the deployment's brand; records of any other brand are
	// rejected. It must be set.
	Brand string
	// CodeSource chooses the source of Property.Code. Empty means none.
	CodeSource CodeSource
}

// Status values of the public Property.
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
)

// Property is the public Property of partner-api-v1.md 2.1.
type Property struct {
	ID        string
	Name      string
	Code      *string
	Status    string
	Timezone  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Active reports whether the property is listed.
func (p Property) Active() bool { return p.Status == StatusActive }

// Map maps one record, or returns a *Rejection.
func Map(rec HotelRecord, opts Options) (Property, error) {
	id, ok := ParseID(rec.HotelID)
	if !ok {
		return Property{}, reject(rec.HotelID, ReasonInvalidID)
	}
	if rec.BrandCode != opts.Brand {
		return Property{}, reject(rec.HotelID, ReasonOtherBrand)
	}
	name := strings.TrimSpace(rec.DisplayName)
	if name == "" {
		return Property{}, reject(rec.HotelID, ReasonEmptyName)
	}
	if !validZone(rec.TimeZone) {
		return Property{}, reject(rec.HotelID, ReasonInvalidTimeZone)
	}
	created, err := time.Parse(time.RFC3339Nano, rec.CreatedAt)
	if err != nil {
		return Property{}, reject(rec.HotelID, ReasonInvalidCreatedAt)
	}
	created = created.UTC().Truncate(time.Millisecond)
	updated := created
	if rec.LastModifiedMS != nil {
		ms, ok := epochMillis(*rec.LastModifiedMS)
		if !ok {
			return Property{}, reject(rec.HotelID, ReasonInvalidModified)
		}
		updated = time.UnixMilli(ms).UTC()
	}
	status := StatusInactive
	if rec.Lifecycle == "LIVE" {
		status = StatusActive
	}
	return Property{
		ID:        id,
		Name:      name,
		Code:      code(rec, opts.CodeSource),
		Status:    status,
		Timezone:  rec.TimeZone,
		CreatedAt: created,
		UpdatedAt: updated,
	}, nil
}

func code(rec HotelRecord, src CodeSource) *string {
	var v *string
	switch src {
	case CodeSourceShortCode:
		v = rec.ShortCode
	case CodeSourceLegacyCode:
		v = rec.LegacyPropertyCode
	}
	if v == nil {
		return nil
	}
	s := strings.TrimSpace(*v)
	if s == "" {
		return nil
	}
	return &s
}

// validZone accepts IANA names only: time.LoadLocation also takes "" (UTC)
// and "Local" (the machine's zone), which are not IANA names.
func validZone(name string) bool {
	if name == "" || name == "Local" {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

// epochMillis reads a JSON number of milliseconds, integer or float, within
// the years time.Time formats as RFC 3339 (0001 to 9999).
func epochMillis(n json.Number) (int64, bool) {
	const lo, hi = -62135596800000, 253402300799999
	if ms, err := n.Int64(); err == nil {
		return ms, ms >= lo && ms <= hi
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		return 0, false
	}
	return int64(f), true
}

// ParseID accepts a UUID in 8-4-4-4-12 hex form, any case, and returns it
// lower-cased.
func ParseID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	b := []byte(s)
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
			continue
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			b[i] = c + ('a' - 'A')
		default:
			return "", false
		}
	}
	return string(b), true
}

// MapRaw decodes and maps one raw record.
func MapRaw(raw []byte, opts Options) (Property, error) {
	rec, err := Decode(raw)
	if err != nil {
		return Property{}, err
	}
	return Map(rec, opts)
}
