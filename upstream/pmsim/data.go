package pmsim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// brandNames is the fixed, ordered list of generated brand codes. Brands
// beyond it are named "brand13", "brand14", ...
func brandNames(n int) []string {
	out := []string{"aurora", "borealis", "cascade", "dunmore", "ember", "fjord",
		"glacier", "harbor", "isla", "juniper", "kestrel", "lumen"}[:min(n, 12)]
	for i := len(out); i < n; i++ {
		out = append(out, fmt.Sprintf("brand%02d", i+1))
	}
	return out
}

type city struct {
	name, country, zone string
}

var cities = [...]city{
	{"Berlin", "DE", "Europe/Berlin"}, {"Munich", "DE", "Europe/Berlin"},
	{"Lisbon", "PT", "Europe/Lisbon"}, {"London", "GB", "Europe/London"},
	{"Paris", "FR", "Europe/Paris"}, {"Reykjavik", "IS", "Atlantic/Reykjavik"},
	{"New York", "US", "America/New_York"}, {"Chicago", "US", "America/Chicago"},
	{"Los Angeles", "US", "America/Los_Angeles"}, {"Honolulu", "US", "Pacific/Honolulu"},
	{"Sao Paulo", "BR", "America/Sao_Paulo"}, {"Mexico City", "MX", "America/Mexico_City"},
	{"Buenos Aires", "AR", "America/Argentina/Buenos_Aires"},
	{"Tokyo", "JP", "Asia/Tokyo"}, {"Singapore", "SG", "Asia/Singapore"},
	{"Mumbai", "IN", "Asia/Kolkata"}, {"Dubai", "AE", "Asia/Dubai"},
	{"Sydney", "AU", "Australia/Sydney"}, {"Auckland", "NZ", "Pacific/Auckland"},
	{"Nairobi", "KE", "Africa/Nairobi"}, {"Cape Town", "ZA", "Africa/Johannesburg"},
}

var suffixes = [...]string{"Mitte", "Riverside", "Airport", "Central", "Old Town", "Harbour", "Park", "Station"}

// offsets are the zones created_at is written in, regardless of the hotel.
var offsets = [...]*time.Location{
	time.FixedZone("", 2*3600), time.FixedZone("", -5*3600), time.UTC,
	time.FixedZone("", 5*3600+1800), time.FixedZone("", 9*3600), time.FixedZone("", -8*3600),
}

// Lifecycle values. UNDER_RENOVATION stands for a value the PMS added after
// the edge was written.
var lifecycles = [10]string{"LIVE", "LIVE", "LIVE", "LIVE", "LIVE", "LIVE",
	"PRE_OPENING", "TEMP_CLOSED", "DEFLAGGED", "UNDER_RENOVATION"}

// InternalFieldNames returns the names of the fields inside a generated
// record's internal object. None of them may ever reach a partner.
func InternalFieldNames() []string {
	return []string{"internal", "owner_legal_name", "owner_email", "owner_contact",
		"contract_ref", "contract_ends_on", "revenue_eur", "commission_pct", "bank_iban", "ops_notes"}
}

// LeakMarker is a substring of every owner_email value of the generated
// internal objects; it must never reach a partner either.
const LeakMarker = "@owners.pms.invalid"

// Unmappable is the number of records of a brand that cannot be mapped
// (docs/pms-api.md section 6), given the hotels per brand: one in eight,
// cycling through a non-UUID id, a blank name, a missing time zone, an
// unknown time zone and an unparseable created_at.
func Unmappable(hotelsPerBrand int) int { return hotelsPerBrand / 8 }

// kv is one field of a record, kept in order so records read naturally.
type kv struct {
	k string
	v any
}

type object []kv

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// generate builds the records of brand number bi, in served order.
// Drift changes the records as they are built and drops some at the end.
func generate(seed int64, bi int, brand string, n int, drift Drift) []json.RawMessage {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^uint64(bi)))
	title := strings.ToUpper(brand[:1]) + brand[1:]
	bad := Unmappable(n)
	base := time.Date(2012, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]json.RawMessage, 0, n)
	var prev time.Time
	var prevText string
	for i := range n {
		c := cities[rng.IntN(len(cities))]
		suffix := suffixes[rng.IntN(len(suffixes))]
		id := uuid(rng)
		if i%9 == 4 {
			id = strings.ToUpper(id) // legacy record
		}
		name := title + " " + c.name + " " + suffix
		switch {
		case i%6 == 2:
			name = "  " + name + " "
		case i%11 == 3:
			name = "\t" + name + "\n"
		}
		created := base.Add(time.Duration(rng.Int64N(int64(4000*24*time.Hour))) / time.Second * time.Second)
		switch i % 5 {
		case 0:
			created = created.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		case 2:
			created = created.Add(time.Duration(rng.IntN(1000000)) * time.Microsecond)
		}
		createdText := created.In(offsets[rng.IntN(len(offsets))]).Format(time.RFC3339Nano)
		switch {
		case i > 0 && i%8 == 3: // the same instant, the same text: id decides the order
			created, createdText = prev, prevText
		case i > 0 && i%8 == 6: // the same instant, another offset
			created = prev
			createdText = prev.In(offsets[(i/8)%len(offsets)]).Format(time.RFC3339Nano)
		}
		prev, prevText = created, createdText

		var short, legacy any = shortCode(c.name, suffix), fmt.Sprintf("%s-%04d", c.country, bi*1000+i+1)
		switch {
		case i%7 == 5:
			short = nil
		case i%13 == 6:
			short = ""
		}
		switch {
		case i%5 == 3:
			legacy = nil
		case i%8 == 7:
			legacy = ""
		}
		zone := any(c.zone)
		lifecycle := lifecycles[i%len(lifecycles)]

		if k := i - (n - bad); k >= 0 { // unmappable, but LIVE so the drop is visible
			lifecycle = "LIVE"
			switch k % 5 {
			case 0:
				id = fmt.Sprintf("HTL-%06d", bi*1000+i+1)
			case 1:
				name = "   "
			case 2:
				zone = nil
			case 3:
				zone = "Mars/Olympus_Mons"
			case 4:
				createdText = created.Format("02/01/2006 15:04")
			}
		}

		rec := object{
			{"hotel_id", id},
			{"brand_code", brand},
			{"display_name", name},
			{"short_code", short},
			{"legacy_property_code", legacy},
			{"lifecycle", lifecycle},
		}
		if zone != nil {
			rec = append(rec, kv{"time_zone", zone})
		}
		rec = append(rec, kv{"created_at", createdText})
		if i%4 != 1 {
			mod := created.Add(time.Duration(rng.Int64N(int64(900 * 24 * time.Hour))))
			rec = append(rec, kv{"last_modified_ms", mod.UnixMilli()})
		}
		rec = append(rec, kv{"internal", internal(rng, title, bi, i, created)})
		rec = append(rec, kv{"amenities", amenities(rng)}, kv{"pms_revision", 7000 + rng.IntN(900)})
		if i%3 == 1 {
			rec = append(rec, kv{"geo", object{
				{"lat", json.Number(strconv.FormatFloat(rng.Float64()*140-70, 'f', 5, 64))},
				{"lon", json.Number(strconv.FormatFloat(rng.Float64()*360-180, 'f', 5, 64))},
			}})
		}
		if i%10 == 7 {
			rec = append(rec, kv{"rollout_flags", object{{"dynamic_rates_v3", true}}})
		}
		b, err := json.Marshal(drift.apply(rec))
		if err != nil { // unreachable: plain values only
			panic(err)
		}
		recs = append(recs, b)
	}
	// The PMS's own order: not by creation, but fixed for a seed; without
	// the first dropped records generated (Drift.Drop: mappable ones only).
	dropped := min(drift.Drop, n-bad)
	served := make([]json.RawMessage, 0, len(recs))
	for _, i := range rng.Perm(len(recs)) {
		if i >= dropped {
			served = append(served, recs[i])
		}
	}
	return served
}

func uuid(rng *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func shortCode(cityName, suffix string) string {
	c := strings.ToUpper(strings.ReplaceAll(cityName, " ", ""))
	s := strings.ToUpper(strings.ReplaceAll(suffix, " ", ""))
	return c[:3] + s[:2]
}

func internal(rng *rand.Rand, title string, bi, i int, created time.Time) object {
	n := bi*1000 + i + 1
	holdings := [...]string{"Helios Hotel Holdings GmbH", "Meridian Asset Partners LLC", "Kaiko Property Trust", "Northwind Leisure SA"}
	return object{
		{"owner_legal_name", holdings[rng.IntN(len(holdings))]},
		{"owner_email", fmt.Sprintf("finance+%04d%s", n, LeakMarker)},
		{"owner_contact", object{{"phone", fmt.Sprintf("+49 30 %07d", rng.IntN(10000000))}, {"escalation", "gm-" + strconv.Itoa(n) + LeakMarker}}},
		{"contract_ref", fmt.Sprintf("CTR-%d-%s-%04d", created.Year(), strings.ToUpper(title[:3]), n)},
		{"contract_ends_on", created.AddDate(15, 0, 0).Format(time.DateOnly)},
		{"revenue_eur", json.Number(strconv.FormatFloat(float64(rng.IntN(900000000))/100+100000, 'f', 2, 64))},
		{"commission_pct", json.Number(strconv.FormatFloat(float64(8+rng.IntN(12))+0.5, 'f', 1, 64))},
		{"bank_iban", fmt.Sprintf("DE%02d 3704 0044 %04d %04d %02d", rng.IntN(100), rng.IntN(10000), rng.IntN(10000), rng.IntN(100))},
		{"ops_notes", "renegotiation pending; do not share with partners"},
	}
}

func amenities(rng *rand.Rand) []string {
	all := [...]string{"wifi", "spa", "gym", "pool", "parking", "restaurant", "bar", "ev_charging"}
	out := []string{}
	for _, a := range all {
		if rng.IntN(2) == 0 {
			out = append(out, a)
		}
	}
	return out
}
