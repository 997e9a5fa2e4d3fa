package pmscheck

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/pms"
)

// Config configures one check.
type Config struct {
	// Client configures the edge's PMS client exactly as the edge would
	// (BaseURL, Token, timeouts, retries, bounds). Its WrapTransport, if
	// any, is kept: the recorder wraps what it returns.
	Client pms.ClientConfig
	// Brand is the deployment's brand (EDGE_BRAND). Required.
	Brand string
	// Mode names the PMS in reports: "live" or "test". Empty means "live".
	Mode string
	// CodeSource is EDGE_CODE_SOURCE. Empty means none.
	CodeSource mapping.CodeSource
	// Gets is how many listed properties are also read one by one on the
	// get route (and compared with the list), plus one unknown id that
	// must answer 404. Zero means DefaultGets; negative means no gets.
	Gets int
}

// DefaultGets is Config.Gets when zero.
const DefaultGets = 5

// unknownID is asked on the get route: it must answer 404.
const unknownID = "00000000-0000-4000-8000-00000000dead"

// fieldsSeenMin: a field the mapping reads that is absent from every one of
// at least this many records was renamed or removed, not merely missing on
// "a few bad records" (docs/pms-api.md section 5).
const fieldsSeenMin = 10

// Rules a Violation may break.
const (
	RuleStatus = "status" // an HTTP status the API does not give for this request
	RuleShape  = "shape"  // an answer's JSON does not match docs/pms-api.md (schema/)
	RulePaging = "paging" // cursors and pages (section 2)
	RuleGet    = "get"    // the get route disagrees with the list (section 3)
	RuleWalk   = "walk"   // the edge's own walk failed: partners would get 502/503/504
)

// Violation is one way the PMS breaks docs/pms-api.md, with how often
// and where.
type Violation struct {
	Rule  string `json:"rule"`
	Field string `json:"field,omitempty"`
	// Message says what is wrong, naming the section of the document.
	Message string `json:"message"`
	// Count is how many times it was seen, everywhere: Seen's sum.
	Count int `json:"count"`
	// Seen says where: each count is of one kind of thing, so a line of
	// the report agrees with the record counts beside it (Records, Drift
	// count the list's records only).
	Seen     Seen     `json:"seen"`
	Examples []string `json:"examples"`
}

// Seen counts a Violation by where it was seen.
type Seen struct {
	ListRecords int `json:"listRecords,omitzero"` // records of the list walk
	ListPages   int `json:"listPages,omitzero"`   // pages of the list (their envelope, status, paging)
	Gets        int `json:"gets,omitzero"`        // answers of the get route
	Walk        int `json:"walk,omitzero"`        // the walk as a whole
}

// unit is what one sighting of a Violation counts as (Seen).
type unit int

const (
	inRecord unit = iota // a record of a list page
	inPage               // a list page
	inGet                // an answer of the get route
	inWalk               // the whole walk
)

// String says the counts of s in words, largest unit first: "30 list
// records, 3 gets".
func (s Seen) String() string {
	var parts []string
	for _, c := range []struct {
		n         int
		one, many string
	}{{s.ListRecords, "list record", "list records"}, {s.ListPages, "list page", "list pages"},
		{s.Gets, "get", "gets"}, {s.Walk, "the walk", "walks"}} {
		switch {
		case c.n == 1 && c.one == "the walk":
			parts = append(parts, c.one)
		case c.n == 1:
			parts = append(parts, "1 "+c.one)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.many))
		}
	}
	return strings.Join(parts, ", ")
}

// maxExamples bounds the examples of one Violation.
const maxExamples = 5

// Report is the outcome of a check.
type Report struct {
	PMS        string `json:"pms"`
	Brand      string `json:"brand"`
	Mode       string `json:"mode"`
	CodeSource string `json:"codeSource"`
	// OK is false when the PMS breaks docs/pms-api.md or, against a
	// baseline (Command), when partners lose a property of it.
	OK      bool    `json:"ok"`
	Answers Answers `json:"answers"`
	// Violations are the broken rules of docs/pms-api.md.
	Violations []Violation `json:"violations"`
	Records    Records     `json:"records"`
	// Rejected lists the ids of the records the mapping left out, by
	// reason.
	Rejected map[mapping.Reason][]string `json:"rejected"`
	// Drift names what changed in the records' shape (a field missing, and
	// what appeared instead; a field of another JSON type), with the
	// records affected: the cause behind the rejections.
	Drift []Drift `json:"drift"`
	// Visible counts the properties partners would see: listed (active)
	// and readable by id only (inactive).
	Visible Visible `json:"visible"`
	// Result is the partner-visible result (--save writes it).
	Result *Result `json:"result"`
	// Baseline is the comparison with a saved Result (Command.Baseline).
	Baseline *BaselineDiff `json:"baseline,omitempty"`
}

// Answers counts the PMS's answers the check saw.
type Answers struct {
	ListPages int `json:"listPages"`
	Gets      int `json:"gets"`
	// Statuses counts every attempt by HTTP status ("error" for an
	// attempt with no answer), retries included.
	Statuses map[string]int `json:"statuses"`
	// TransientGets counts the gets that still failed after the edge's
	// own retries with what docs/pms-api.md allows a PMS to answer now
	// and then (a 5xx, a 429, no answer): a flaky PMS, not a broken rule,
	// unless no get succeeded at all.
	TransientGets int `json:"transientGets"`
}

// Records counts the records of the walk.
type Records struct {
	Walked   int `json:"walked"`
	Mapped   int `json:"mapped"`
	Rejected int `json:"rejected"`
}

// Visible counts the mapped properties by how partners see them.
type Visible struct {
	Listed     int `json:"listed"`
	ByIDOnly   int `json:"byIdOnly"`
	Properties int `json:"properties"`
}

// BaselineDiff is a Diff with the file it was made against.
type BaselineDiff struct {
	File string `json:"file"`
	*Diff
}

// Run checks the PMS of cfg. The error is for a configuration the check
// cannot run with (a bad URL) or a broken schema file; everything the PMS
// does wrong is in the Report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Brand == "" {
		return nil, errors.New("pmscheck: a brand is required")
	}
	sc, err := compileSchemas()
	if err != nil {
		return nil, err
	}
	mode := cmp.Or(cfg.Mode, "live")
	r := &Report{PMS: cfg.Client.BaseURL, Brand: cfg.Brand, Mode: mode, CodeSource: string(cmp.Or(cfg.CodeSource, mapping.CodeSourceNone)),
		Rejected: map[mapping.Reason][]string{}, Answers: Answers{Statuses: map[string]int{}}}
	c := &checker{sc: sc, cfg: cfg, a: &r.Answers, seenCursor: map[string]int{}, seenID: map[uint64]int{}, seed: maphash.MakeSeed()}
	// Each list page is checked as the walk reads it, and let go.
	c.rec = &recorder{onAdd: c.listPage}
	cc := cfg.Client
	cc.WrapTransport = c.rec.wrap(cc.WrapTransport)
	client, err := pms.NewClient(cc)
	if err != nil {
		return nil, err
	}
	defer client.CloseIdleConnections()

	// The walk: the edge's own list walk and mapping. A record on two
	// overlapping pages is one record (the paging rule reports the overlap):
	// counted, and listed as rejected, once (its id compared as the paging
	// rule compares them, case-insensitively).
	var rejected []*mapping.Rejection
	seen := map[string]bool{}
	census := NewCensus(cfg.CodeSource)
	walk := pms.NewDirect(client, pms.DirectOptions{Brand: cfg.Brand, CodeSource: cfg.CodeSource, OnRecord: census.Add,
		OnReject: func(_ context.Context, rj *mapping.Rejection) {
			if k := strings.ToLower(rj.HotelID); !seen[k] {
				seen[k] = true
				rejected = append(rejected, rj)
			}
		}})
	props, _, walkErr := walk.Properties(ctx)
	c.rec.stop()
	// What only the whole walk tells: fields the mapping reads that no record carries.
	if census.records >= fieldsSeenMin {
		for _, f := range census.read {
			if census.present(f) == 0 {
				c.v.add(inWalk, RuleShape, f, fmt.Sprintf("a field the mapping reads is absent from all %d records: renamed or removed? (section 5)", census.records),
					"every page")
			}
		}
	}
	if walkErr != nil {
		c.v.add(inWalk, RuleWalk, "", "the edge's list walk failed, partners would get an error: "+walkErr.Error(),
			"GET "+listPath(cfg.Brand))
	}

	// The items alone, not a Snapshot (its index and joined JSON would be
	// two more copies of what the walk kept).
	items := upstream.ItemsByID(props)
	if walkErr == nil {
		c.gets(ctx, client, items)
	}

	r.Violations = c.v.list
	r.Drift = census.Drift()
	r.Records = Records{Walked: len(items) + len(rejected), Mapped: len(items), Rejected: len(rejected)}
	res := NewResult(cfg.Brand, mode, cfg.CodeSource, items, rejected)
	for _, rj := range res.Rejected { // ordered by id
		r.Rejected[rj.Reason] = append(r.Rejected[rj.Reason], rj.ID)
	}
	active := 0
	for _, it := range items {
		if it.Active {
			active++
		}
	}
	r.Visible = Visible{Listed: active, ByIDOnly: len(items) - active, Properties: len(items)}
	if walkErr == nil { // else nothing partners would see: do not save an empty list as a baseline
		r.Result = res
	}
	r.OK = len(r.Violations) == 0
	return r, nil
}

func listPath(brand string) string { return "/internal/v2/brands/" + brand + "/hotels" }

// violations aggregates Violations by rule, field and message.
type violations struct{ list []Violation }

// add counts one sighting, in u, of rule broken.
func (v *violations) add(u unit, rule, field, message, example string) {
	i := slices.IndexFunc(v.list, func(x Violation) bool { return x.Rule == rule && x.Field == field && x.Message == message })
	if i < 0 {
		v.list = append(v.list, Violation{Rule: rule, Field: field, Message: message, Examples: []string{}})
		i = len(v.list) - 1
	}
	x := &v.list[i]
	x.Count++
	*[...]*int{inRecord: &x.Seen.ListRecords, inPage: &x.Seen.ListPages, inGet: &x.Seen.Gets, inWalk: &x.Seen.Walk}[u]++
	if len(x.Examples) < maxExamples && example != "" {
		x.Examples = append(x.Examples, example)
	}
}

// countStatus counts one attempt by status.
func (a *Answers) countStatus(x *exchange) {
	key := "error"
	if x.status != 0 {
		key = strconv.Itoa(x.status)
	}
	a.Statuses[key]++
}

// statusProblem says what is wrong with a status the PMS gave, or "" when
// docs/pms-api.md allows it (200, a transient 5xx, 429), for the list
// route (list) or a get of a listed hotel.
func statusProblem(status int, list bool) string {
	switch {
	case status == http.StatusOK, status >= 500 && status <= 599, status == http.StatusTooManyRequests:
		return ""
	case status == http.StatusNotFound && list:
		return "the list route answered 404: an unknown brand lists as empty, so this is a wrong base URL or route (section 2, docs/contract.md section 10)"
	case status == http.StatusNotFound:
		return "a hotel of the list answered 404 on the get route (section 3)"
	case status == http.StatusBadRequest:
		return "400 to a request the edge built from the API (a limit of 1..500, a cursor the PMS handed out) (sections 2 and 4)"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("%d: the PMS refused the edge's token (PMS_TOKEN, section 1)", status)
	}
	return fmt.Sprintf("status %d is not an answer of the API (sections 2 to 4)", status)
}

// checker checks the answers of one check. The list pages are checked in
// order, one at a time as the walk reads it (listPage): it keeps counts, the
// cursors handed out and a hash of each id listed, never a page
// (docs/resilience.md, "Memory of a walk": `edge pms check`).
type checker struct {
	sc         *schemas
	cfg        Config
	v          violations
	a          *Answers
	rec        *recorder
	seenCursor map[string]int // nextCursor -> page that handed it out
	seenID     map[uint64]int // hash of hotel_id (lower-cased) -> page
	seed       maphash.Seed
	page       int
	wantCursor string // the cursor the next page must be asked with
	// lastPage is the address of the last page answered 200: the edge's
	// client asks a page again on a new connection when it came on a
	// reused one and ends the walk (docs/resilience.md, "Stray answers"),
	// and the check reads the page once.
	lastPage string
}

// body checks an answer's Content-Type and, against s, its JSON (section
// 1); ok is false when it is not JSON. ids, for a list page, are the
// hotel_id of its records, to locate a record's problems; nil for a hotel
// of the get route. A problem's message is the same for every record with
// that problem, so they aggregate.
func (c *checker) body(x *exchange, s *jsonschema.Schema, where, notJSON string, ids []string) bool {
	whole := inGet
	if ids != nil {
		whole = inPage
	}
	if mt, _, err := mime.ParseMediaType(x.contentType); err != nil || mt != "application/json" {
		c.v.add(whole, RuleShape, "Content-Type", fmt.Sprintf("Content-Type %q, want application/json (section 1)", x.contentType), where)
	}
	var doc any
	if err := json.Unmarshal(x.body, &doc); err != nil {
		c.v.add(whole, RuleShape, "", notJSON, where)
		return false
	}
	for _, p := range validate(s, doc) {
		msg, at, u := "HotelRecord: "+p.message+" (section 5)", where, whole
		if ids != nil { // at "/hotels/3 (hotel <id>)" for a record's problem
			at += " /" + strings.Join(p.path, "/")
			if len(p.path) < 2 || p.path[0] != "hotels" {
				if len(p.path) == 0 && p.message == missingField && envelope[p.field] != "" {
					continue // listPage names what appeared instead, and what the edge would do
				}
				msg = "list envelope: " + p.message + " (section 2)"
			} else {
				u = inRecord
				if i, err := strconv.Atoi(p.path[1]); err == nil && i < len(ids) && ids[i] != "" {
					at += " (hotel " + ids[i] + ")"
				}
			}
		}
		c.v.add(u, RuleShape, p.field, msg, at)
	}
	return true
}

// envelope are the fields of a list page (docs/pms-api.md section 2), with
// what the edge makes of a page without each.
var envelope = map[string]string{
	"hotels":     "the edge would take the page as holding no record",
	"nextCursor": "the edge reads a page without it as the last one",
}

// missingEnvelope reports a field of envelope missing from a list page
// (top: its fields), naming the fields outside docs/pms-api.md whose values
// could be it (a renamed field: nextCursor's string or null, hotels'
// array), and what the edge would serve: for nextCursor, the pages up to
// this one only.
func (c *checker) missingEnvelope(top map[string]json.RawMessage, where string) {
	for _, name := range slices.Sorted(maps.Keys(envelope)) {
		if _, ok := top[name]; ok {
			continue
		}
		var appeared []string
		for _, other := range slices.Sorted(maps.Keys(top)) {
			v := strings.TrimSpace(string(top[other]))
			if _, known := envelope[other]; known || v == "" {
				continue
			}
			if name == "hotels" && v[0] == '[' || name == "nextCursor" && (v[0] == '"' || v == "null") {
				appeared = append(appeared, "`"+other+"`")
			}
		}
		msg := "no " + name
		if len(appeared) > 0 {
			msg += ", but " + strings.Join(appeared, ", ") + " instead: renamed?"
		}
		msg += " (section 2); " + envelope[name]
		if name == "nextCursor" {
			msg += ", so it would stop its walk here and serve " + pagesUpTo(c.page) + " of the list only"
		}
		c.v.add(inPage, RulePaging, name, msg, where)
	}
}

// pagesUpTo says pages 1 to n: "page 1", "pages 1 to 3".
func pagesUpTo(n int) string {
	if n == 1 {
		return "page 1"
	}
	return fmt.Sprintf("pages 1 to %d", n)
}

// listPage checks one exchange of the walk, in the walk's order.
func (c *checker) listPage(x *exchange) {
	v := &c.v
	c.a.countStatus(x)
	if x.status == 0 {
		return // a failed attempt: retried, or the walk error says it
	}
	cursor := x.url.Query().Get("cursor")
	where := fmt.Sprintf("page %d", c.page+1)
	if cursor != "" {
		where += " (cursor " + clip(cursor, 24) + ")"
	}
	if p := statusProblem(x.status, true); p != "" {
		v.add(inPage, RuleStatus, "", p, where)
		return
	}
	if x.status != http.StatusOK {
		return
	}
	u := x.url.String()
	if u == c.lastPage {
		return
	}
	c.lastPage = u
	c.page++
	c.a.ListPages++
	if cursor != c.wantCursor {
		v.add(inPage, RulePaging, "cursor", "the edge asked a page with a cursor it was not handed (a bug of the check)", where)
	}
	if !x.complete {
		return // over the body bound: the walk error says it
	}
	var env struct {
		Hotels []struct {
			ID any `json:"hotel_id"`
		} `json:"hotels"`
		NextCursor *string `json:"nextCursor"`
	}
	_ = json.Unmarshal(x.body, &env) // shape problems are reported by body
	// Absent, or null (the last page's nextCursor)? Only then is the page
	// decoded again, for its field names.
	if env.Hotels == nil || env.NextCursor == nil {
		var top map[string]json.RawMessage
		if json.Unmarshal(x.body, &top) == nil {
			c.missingEnvelope(top, where)
		}
	}
	ids := make([]string, len(env.Hotels))
	for i, h := range env.Hotels {
		if s, ok := h.ID.(string); ok {
			ids[i] = clip(s, 64)
		}
	}
	if !c.body(x, c.sc.list, where, "the list page is not JSON (section 2)", ids) {
		return
	}
	limit, _ := strconv.Atoi(x.url.Query().Get("limit"))
	if limit > 0 && len(ids) > limit {
		v.add(inPage, RulePaging, "hotels", fmt.Sprintf("a page of %d records for limit=%d (section 2)", len(ids), limit), where)
	}
	for _, id := range ids {
		if id == "" {
			continue
		}
		key := maphash.String(c.seed, strings.ToLower(id))
		if first, dup := c.seenID[key]; dup {
			v.add(inRecord, RulePaging, "nextCursor", "a record listed twice in one walk: pages overlap (section 2)",
				fmt.Sprintf("%s hotel %s (first on page %d)", where, id, first))
		} else {
			c.seenID[key] = c.page
		}
	}
	switch {
	case env.NextCursor == nil:
		c.wantCursor = ""
	case *env.NextCursor == "":
		v.add(inPage, RulePaging, "nextCursor", `empty nextCursor: the last page says null (section 2)`, where)
	default:
		cur := clip(*env.NextCursor, 256) // kept for the walk: no longer than a page would make it
		if first, dup := c.seenCursor[cur]; dup {
			v.add(inPage, RulePaging, "nextCursor", "cursor loop: a page hands out a cursor handed out before (section 2)",
				fmt.Sprintf("%s, as page %d did", where, first))
		} else {
			c.seenCursor[cur] = c.page
		}
		c.wantCursor = *env.NextCursor
	}
}

// gets reads up to cfg.Gets listed properties on the get route, and one unknown id.
func (c *checker) gets(ctx context.Context, client *pms.Client, items []*upstream.Item) {
	n := cmp.Or(c.cfg.Gets, DefaultGets)
	if n < 0 {
		return
	}
	v, brand := &c.v, c.cfg.Brand
	get := pms.NewDirect(client, pms.DirectOptions{Brand: brand, CodeSource: c.cfg.CodeSource})
	// property gets id and reports whether it failed as a PMS may now and then (transientFailure).
	property := func(id string) (*upstream.Item, bool, error) {
		before := len(c.rec.exchanges())
		got, err := get.Property(ctx, id)
		return got, err != nil && transientFailure(err, c.rec.exchanges()[before:]), err
	}
	succeeded := 0
	var transient []string
	for _, it := range items[:min(n, len(items))] {
		where := "GET " + listPath(brand) + "/" + it.ID
		got, flaky, err := property(it.ID)
		switch {
		case upstream.KindOf(err) == upstream.NotFound:
			v.add(inGet, RuleGet, "", "a listed property is not found, or not mappable, on the get route (section 3)", where)
		case flaky:
			// The client already retried as the edge does (same policy,
			// budget and deadlines); what is left is a PMS's bad moment.
			transient = append(transient, where)
		case err != nil:
			v.add(inGet, RuleGet, "", "the get route failed: "+err.Error(), where)
		default:
			succeeded++
			for _, f := range changedFields(it.JSON, got.JSON) {
				v.add(inGet, RuleGet, f, "the get route maps to another value than the list (section 3)", where)
			}
		}
	}
	c.a.TransientGets = len(transient)
	if succeeded == 0 {
		for _, where := range transient {
			v.add(inGet, RuleGet, "", "every get failed with a 5xx, 429 or no answer, after the edge's retries (section 3)", where)
		}
	}
	if _, flaky, err := property(unknownID); upstream.KindOf(err) != upstream.NotFound && !flaky {
		v.add(inGet, RuleGet, "", fmt.Sprintf("an unknown hotel did not answer 404 (section 3): %v", err),
			"GET "+listPath(brand)+"/"+unknownID)
	}
	for _, x := range c.rec.exchanges() {
		c.a.countStatus(x)
		if x.status == 0 {
			continue
		}
		where := "GET " + x.url.Path
		if p := statusProblem(x.status, false); p != "" && !strings.HasSuffix(x.url.Path, "/"+unknownID) {
			v.add(inGet, RuleStatus, "", p, where)
		}
		if x.status == http.StatusOK && x.complete {
			c.a.Gets++
			c.body(x, c.sc.hotel, where, "the hotel is not JSON (section 3)", nil)
		}
	}
}

// transientFailure reports whether a call that failed with err, whose
// attempts were xs, failed as a PMS may now and then (docs/pms-api.md:
// a 5xx or 429, or no answer; or the client's breaker or deadline after
// such answers), which the edge retries or serves stale over, rather than
// by breaking a rule.
func transientFailure(err error, xs []*exchange) bool {
	switch upstream.KindOf(err) {
	case upstream.Unavailable, upstream.Timeout:
		return true
	}
	if len(xs) == 0 {
		return false
	}
	last := xs[len(xs)-1]
	return last.status == 0 || last.status == http.StatusTooManyRequests || (last.status >= 500 && last.status <= 599)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
