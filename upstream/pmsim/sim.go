// Package pmsim is a simulator of the internal PMS API (docs/pms-api.md):
// a real http.Handler with deterministic, seeded and deliberately messy hotel
// data, test accessors, request counters and faults that can be switched on
// and off while it serves.
//
// Routes:
//
//	GET /internal/v2/brands/{brandCode}/hotels?limit=<1..500>&cursor=<opaque>
//	GET /internal/v2/brands/{brandCode}/hotels/{hotelId}
//
// and the simulator's own control route, outside the PMS API's paths
// (control.go): GET /_pmsim/stats.
//
// Every answer is application/json. Errors are {"error": "<code>"} with the
// codes hotel_not_found (404), invalid_limit and invalid_cursor (400),
// unauthorized (401), not_found (404, unknown path) and method_not_allowed
// (405), unless a fault says otherwise.
package pmsim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config configures a Sim. The zero value is usable.
type Config struct {
	// Brands is the number of generated brands: "aurora", "borealis",
	// "cascade", ... in that fixed order. Zero means 3.
	Brands int
	// HotelsPerBrand is the number of generated records per brand, one in
	// eight of them unmappable (see Unmappable). Zero means 40.
	HotelsPerBrand int
	// Seed makes the data and the fault randomness: the same seed gives the
	// same records, byte for byte, and the same served order.
	Seed int64
	// PageSize, when positive, caps every list page at this many records
	// whatever limit the client asks for, so tests can force many pages.
	// Zero means pages are as large as limit.
	PageSize int
	// ShuffleEachWalk, when set, serves each walk (a list request without
	// a cursor, and the pages its cursors lead to) in a new order of its
	// own, as a PMS whose order is "not guaranteed stable". Pages of one walk
	// never overlap. False serves every walk in the stored order of Records.
	ShuffleEachWalk bool
	// Token, when set, is required as "Authorization: Bearer <Token>";
	// any other request answers 401 {"error":"unauthorized"}. Empty means
	// no authentication.
	Token string
	// Drift plays a changed PMS (renamed or retyped fields, lost records,
	// broken paging). The zero value is the PMS of docs/pms-api.md.
	Drift Drift
	// Churn, when positive, changes the data every Churn while the Sim
	// serves (churn.go: ChurnChanges changes per brand and step), made as
	// requests arrive: a Sim nobody calls changes nothing. Zero: the data
	// changes only by SetRecords and Sim.Churn.
	Churn time.Duration
	// ChurnChanges is the number of changes one churn step makes in each
	// brand, their kinds taken in the order of ChurnKinds, again and again:
	// 7 or more make every kind in every step. Zero means 3: a rename, a
	// status change and a hotel replaced by a new one. With Churn, the rate
	// is ChurnChanges per Churn per brand.
	ChurnChanges int
}

// DefaultLimit is the page size of a list request without limit; MaxLimit
// is the largest limit accepted.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// Sim is the simulated PMS. It is safe for concurrent use; its data, faults
// and counters may be changed while it serves.
type Sim struct {
	cfg  Config
	salt uint64 // from the seed: cursors cannot be made up or edited

	mu     sync.RWMutex
	brands []string
	data   map[string]*brandData

	stats  stats
	faults faultState
	walks  walkSeeds
	churn  churn
}

// brandData is one brand's records with an index that churn keeps up to
// date record by record (set), so that a change costs the records it
// changes, never the brand's size.
type brandData struct {
	recs  []json.RawMessage // stored order; nil: a slot churn emptied (served as nothing)
	ids   []string          // the hotel_id of each slot as stored; "" when none
	exact map[string]slot   // hotel_id as stored -> its first slot
	fold  map[string]slot   // lower-cased hotel_id -> the first slot of such a record

	// What churn left to undo (churn.go), oldest first.
	free   []churned // emptied slots, for creations
	broken []broken  // records made unmappable, for mending
}

// slot is where the first record of an id is, and how many records have it.
type slot struct{ first, n int }

// New returns a Sim serving the generated data of cfg.
func New(cfg Config) *Sim {
	if cfg.Brands <= 0 {
		cfg.Brands = 3
	}
	if cfg.HotelsPerBrand <= 0 {
		cfg.HotelsPerBrand = 40
	}
	if cfg.Drift.Paging != "" && cfg.PageSize == 0 {
		cfg.PageSize = DriftPageSize
	}
	s := &Sim{
		cfg:    cfg,
		salt:   rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc0ffee)).Uint64(),
		brands: brandNames(cfg.Brands),
		data:   make(map[string]*brandData, cfg.Brands),
	}
	s.faults.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfa17))
	s.walks.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x3a1c))
	s.churn.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0xc4a7))
	for i, b := range s.brands {
		s.data[b] = index(generate(cfg.Seed, i, b, cfg.HotelsPerBrand, cfg.Drift))
	}
	return s
}

func index(recs []json.RawMessage) *brandData {
	d := &brandData{recs: recs, ids: make([]string, len(recs)),
		exact: make(map[string]slot, len(recs)), fold: make(map[string]slot, len(recs))}
	for i, rec := range recs {
		d.ids[i] = storedID(rec)
		d.add(i)
	}
	return d
}

// storedID is the hotel_id of rec, "" when it has none (or is no object).
func storedID(rec json.RawMessage) string {
	var probe struct {
		ID string `json:"hotel_id"`
	}
	if json.Unmarshal(rec, &probe) != nil {
		return ""
	}
	return probe.ID
}

// set puts rec, whose hotel_id is id, in slot i (nil empties it), keeping
// the index right.
func (d *brandData) set(i int, rec json.RawMessage, id string) {
	for i >= len(d.recs) {
		d.recs, d.ids = append(d.recs, nil), append(d.ids, "")
	}
	d.remove(i)
	if rec == nil {
		id = ""
	}
	d.recs[i], d.ids[i] = rec, id
	d.add(i)
}

// add indexes slot i.
func (d *brandData) add(i int) {
	id := d.ids[i]
	if id == "" {
		return
	}
	for _, e := range [...]struct {
		m map[string]slot
		k string
	}{{d.exact, id}, {d.fold, strings.ToLower(id)}} {
		sl, ok := e.m[e.k]
		if !ok || i < sl.first {
			sl.first = i
		}
		sl.n++
		e.m[e.k] = sl
	}
}

// remove takes slot i out of the index. Only when another record has the
// same id does it look for that record's slot.
func (d *brandData) remove(i int) {
	id := d.ids[i]
	if id == "" {
		return
	}
	lower := strings.ToLower(id)
	for _, e := range [...]struct {
		m    map[string]slot
		k    string
		same func(string) bool
	}{
		{d.exact, id, func(o string) bool { return o == id }},
		{d.fold, lower, func(o string) bool { return o != "" && strings.ToLower(o) == lower }},
	} {
		sl := e.m[e.k]
		if sl.n--; sl.n <= 0 {
			delete(e.m, e.k)
			continue
		}
		if sl.first == i {
			for j := i + 1; j < len(d.ids); j++ {
				if e.same(d.ids[j]) {
					sl.first = j
					break
				}
			}
		}
		e.m[e.k] = sl
	}
}

// Brands returns the brand codes the Sim serves, generated ones first.
func (s *Sim) Brands() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.brands...)
}

// Records returns a copy of the records of brand, in stored order (the order
// every walk is served in, unless Config.ShuffleEachWalk), without the
// slots churn emptied; nil for an unknown brand.
func (s *Sim) Records(brand string) []json.RawMessage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d := s.data[brand]; d != nil {
		return cloneAll(d.recs)
	}
	return nil
}

// cloneAll copies recs, leaving out emptied slots (nil).
func cloneAll(recs []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(recs))
	for _, r := range recs {
		if r != nil {
			out = append(out, slices.Clone(r))
		}
	}
	return out
}

// SetRecords replaces the records of brand, served from now on in the given
// order and exactly as given (they need not be valid records, nor even valid
// JSON: list pages would then be invalid JSON too). A new brand is added to
// Brands. Cursors handed out earlier stay valid as offsets into the new data.
func (s *Sim) SetRecords(brand string, recs []json.RawMessage) {
	d := index(cloneAll(recs))
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.data[brand]; !ok {
		s.brands = append(s.brands, brand)
	}
	s.data[brand] = d
}

// ServeHTTP implements the internal PMS API.
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ControlPrefix) {
		s.control(w, r) // the simulator's own: no fault, token, churn or count
		return
	}
	s.stats.arrived(Route(r.URL.Path), r.Header)
	s.churnDue(time.Now())
	if s.applyFaults(w, r, s.serve) {
		s.serve(w, r)
	}
}

// serve answers a request as a healthy PMS.
func (s *Sim) serve(w http.ResponseWriter, r *http.Request) {
	brand, id, rt := route(r.URL.Path)
	if s.cfg.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.Token {
		s.stats.inc(&s.stats.s.Unauthorized)
		w.Header().Set("WWW-Authenticate", `Bearer realm="pms"`)
		writeError(w, http.StatusUnauthorized, "unauthorized")
		return
	}
	if rt == "" {
		writeError(w, http.StatusNotFound, "not_found")
		return
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	}
	if rt == RouteList {
		s.list(w, r, brand)
		return
	}
	s.get(w, brand, id)
}

// route splits an API path into brand and hotel id, with its route
// template (Route).
func route(path string) (brand, id, tmpl string) {
	rest, ok := strings.CutPrefix(path, "/internal/v2/brands/")
	parts := strings.Split(rest, "/")
	switch {
	case !ok || len(parts) < 2 || parts[0] == "" || parts[1] != "hotels": // no route
	case len(parts) == 2:
		return parts[0], "", RouteList
	case len(parts) == 3 && parts[2] != "":
		return parts[0], parts[2], RouteGet
	}
	return "", "", ""
}

// get answers one hotel. The id matches the stored hotel_id exactly or,
// failing that, case-insensitively (the PMS treats UUIDs as case-insensitive,
// so the lower-cased id of a legacy upper-case record finds it).
func (s *Sim) get(w http.ResponseWriter, brand, id string) {
	s.mu.RLock()
	var rec json.RawMessage
	if d := s.data[brand]; d != nil {
		sl, ok := d.exact[id]
		if !ok {
			sl, ok = d.fold[strings.ToLower(id)]
		}
		if ok {
			rec = d.recs[sl.first]
		}
	}
	s.mu.RUnlock()
	if rec == nil {
		writeError(w, http.StatusNotFound, "hotel_not_found")
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, status int, code string) {
	b, _ := json.Marshal(map[string]string{"error": code})
	writeJSON(w, status, b)
}
