package mapping

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones must load the same on every machine
	"unicode/utf8"
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
	// Zones remembers which time-zone names are valid, so a load of many
	// records does not read the zone database once per record. Nil checks
	// every name afresh. It changes no result, only the cost.
	Zones *ZoneCache
}

// Status values of the public Property.
const (
	StatusActive   = "active"
	StatusInactive = "inactive"
)

// Property is the public Property of docs/partner-api.md section 2.1.
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

// Map maps one record, or returns a *Rejection: the fast path's mapView
// over the record's fields, so both paths apply one set of checks.
func Map(rec HotelRecord, opts Options) (Property, error) {
	var v recordView
	for f, s := range [...]*string{fHotelID: &rec.HotelID, fBrand: &rec.BrandCode, fName: &rec.DisplayName,
		fShortCode: rec.ShortCode, fLegacyCode: rec.LegacyPropertyCode, fLifecycle: &rec.Lifecycle,
		fZone: &rec.TimeZone, fCreated: &rec.CreatedAt} {
		if s != nil {
			v.kind[f], v.val[f] = vString, []byte(*s)
		}
	}
	if rec.LastModifiedMS != nil {
		v.kind[fModified], v.val[fModified] = vNumber, []byte(*rec.LastModifiedMS)
	}
	return mapView(&v, opts, nil)
}

// Longest name and code served, in characters (docs/contract.md section 15;
// docs/openapi.yaml states them as maxLength): a longer one makes the record
// unmappable (ReasonTooLong), so a PMS cannot make the edge serve
// megabytes per property.
const (
	MaxNameLen = 256
	MaxCodeLen = 64
)

// tooLong reports whether s has more than n characters, looking at no more
// than about 4n bytes of it.
func tooLong(s []byte, n int) bool {
	if len(s) <= n {
		return false
	}
	return len(s) > 4*n || utf8.RuneCount(s) > n // UTF-8: at most 4 bytes a character
}

// parseCreated reads an RFC 3339 time and returns it in UTC, truncated to
// milliseconds, within the years TimeFormat can write (0001 to 9999 in UTC:
// "9999-12-31T23:30:00-01:00" would otherwise be written as year 10000).
func parseCreated(s string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	t = t.UTC().Truncate(time.Millisecond)
	if ms := t.UnixMilli(); ms < minMillis || ms > maxMillis {
		return time.Time{}, false
	}
	return t, true
}

// ZoneCache memoises validZone for the names a PMS sends (lookup). It holds at most
// maxZones names (more than the IANA database has), so drifting data cannot
// grow it without bound; past that, names are checked afresh. Safe for
// concurrent use; the zero value is ready.
type ZoneCache struct {
	mu    sync.Mutex
	known map[string]zoneEntry
}

// zoneEntry is a remembered name: the key itself (lookup hands it out, so
// a known name costs no allocation) and whether it is valid.
type zoneEntry struct {
	name string
	ok   bool
}

const maxZones = 1024

// validZone accepts IANA names only: time.LoadLocation also takes "" (UTC),
// "Local" and, from the system's zoneinfo directory, "localtime" (the
// machine's zone) and the "posixrules", "posix/..." and "right/..." copies,
// which are not IANA names and are missing on other machines.
func validZone(name string) bool {
	switch {
	case name == "", name == "Local", name == "localtime", name == "posixrules",
		strings.HasPrefix(name, "posix/"), strings.HasPrefix(name, "right/"):
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}

// minMillis and maxMillis bound the public timestamps: 0001-01-01T00:00:00.000Z
// to 9999-12-31T23:59:59.999Z, the years TimeFormat writes as four digits.
const minMillis, maxMillis = -62135596800000, 253402300799999

// epochMillis reads a JSON number of milliseconds, integer or float, within
// minMillis and maxMillis.
func epochMillis(n json.Number) (int64, bool) {
	const lo, hi = minMillis, maxMillis
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
// lower-cased (copied only when it was not already).
func ParseID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	upper := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return "", false
			}
		case 'A' <= c && c <= 'F':
			upper = true
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return "", false
		}
	}
	if upper {
		return strings.ToLower(s), true
	}
	return s, true
}

// MapRaw decodes and maps one raw record: Map(Decode(raw)). Most records
// take a fast path without reflection (fast.go), whose every result is
// the one of the encoding/json path below.
func MapRaw(raw []byte, opts Options) (Property, error) {
	return MapRawFor(raw, opts, nil)
}

// MapRawFor is MapRaw for a caller that needs the whole property of some
// records only: every record maps, or is rejected with its reason, exactly
// as MapRaw says, but a mapped record whose id want refuses may come back
// with its ID alone, its name and code not copied out of raw. A walk of
// many records of which it compares a few (the shadow candidate: those the
// live PMS has) then makes little garbage. Nil want wants every record.
func MapRawFor(raw []byte, opts Options, want func(id string) bool) (Property, error) {
	if p, ok, err := mapRawFastFor(raw, opts, want); ok {
		return p, err
	}
	return mapRawStd(raw, opts)
}

// mapRawStd is MapRaw through encoding/json (Decode), the reference the
// fast path is held to, and its fallback.
func mapRawStd(raw []byte, opts Options) (Property, error) {
	rec, err := Decode(raw)
	if err != nil {
		return Property{}, err
	}
	return Map(rec, opts)
}
