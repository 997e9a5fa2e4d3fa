package edge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

var (
	healthOK         = []byte(`{"status":"ok"}`)
	healthUnhealthy  = []byte(`{"status":"unhealthy"}`)
	retryAfterHealth = []string{"1"}
)

// handleHealth answers liveness from healthy. It reads nothing of the
// request.
func handleHealth(healthy func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, status := healthOK, http.StatusOK
		if !healthy() {
			body, status = healthUnhealthy, http.StatusServiceUnavailable
			w.Header()["Retry-After"] = retryAfterHealth // every 503 carries it
		}
		writeJSON(w, status, body)
	})
}

func apiInfo(docsURL string) []byte {
	b, _ := json.Marshal(struct {
		Object           string `json:"object"`
		APIVersion       string `json:"apiVersion"`
		DocumentationURL string `json:"documentationUrl"`
	}{"api_info", "v1", docsURL})
	return b
}

// handleInfo answers GET /v1/ with info (apiInfo): proof that the key and
// the endpoint are right.
func handleInfo(rs responder, info []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := parseQuery(r.URL.RawQuery, nil); err != nil {
			rs.fail(w, r, err)
			return
		}
		rs.writeOne(w, r, info)
	})
}

// handleListProperties answers GET /v1/properties: the active properties
// the key may see, ordered by createdAt then id, one page of them, with the
// events feed's position at the snapshot (meta.events.next). With asOf, a
// list cursor of an earlier page, the page is served from the snapshot it
// names (docs/contract.md section 25): the current one (the common case,
// told by comparing the cursor with the current one's), or one the feed
// still holds; 410 LIST_SNAPSHOT_EXPIRED when it holds it no longer.
func handleListProperties(rs responder, cats catalogs, fs feeds) http.Handler {
	params := [2][]intParam{listParams(validAsOf(fs.Live)), listParams(validAsOf(fs.Sandbox))}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := Key(r.Context())
		ps := params[0]
		if key.Mode == keys.ModeTest {
			ps = params[1]
		}
		q, err := parseQuery(r.URL.RawQuery, ps)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		snap, err := cats.of(key).Snapshot(r.Context())
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		f := fs.of(key)
		var next string
		if f != nil {
			next = f.Next(snap) // encoded once per snapshot
		}
		cur := snap
		if asOf := q.text[2]; q.given[2] && asOf != next {
			if snap, err = f.AsOf(r.Context(), asOf, stateFrom(r.Context()).start); err != nil {
				if errors.Is(err, events.ErrCursorUnknown) {
					err = fmt.Errorf("%w: %w", errUnknownAsOf, err)
				}
				rs.fail(w, r, err)
				return
			}
			next = asOf
		}
		p := pageOf(snap, cur, key, q.n[0], q.n[1])
		p.next = next
		rs.writePage(w, r, p)
	})
}

// validAsOf is f.ValidAsOf; without a feed no asOf is valid.
func validAsOf(f *events.Feed) func(string) bool {
	if f == nil {
		return func(string) bool { return false }
	}
	return f.ValidAsOf
}

// errUnknownAsOf marks an events.ErrCursorUnknown of asOf (problemOf: 422
// on asOf, not on after).
var errUnknownAsOf = errors.New("edge: asOf never issued")

// handleEvents answers GET /v1/events (docs/contract.md section 23): the
// changes to the properties the key may see, oldest first, after the
// cursor after. The events come from the walks on the clock, never from
// this request: a catalog that walks on the clock (upstream.Awaiter) is
// only asked to wait for its first snapshot (and its 503 or 502 is the
// answer before one exists); the PMS is never called (docs/contract.md
// section 24). The feed itself is read from memory.
func handleEvents(rs responder, cats catalogs, fs feeds) http.Handler {
	params := [2][]intParam{eventsParams(validCursor(fs.Live)), eventsParams(validCursor(fs.Sandbox))}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := Key(r.Context())
		ps := params[0]
		if key.Mode == keys.ModeTest {
			ps = params[1]
		}
		q, err := parseQuery(r.URL.RawQuery, ps)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		f := fs.of(key)
		if f == nil {
			rs.fail(w, r, errNoFeed)
			return
		}
		if a, ok := cats.of(key).(upstream.Awaiter); ok {
			if err := a.Await(r.Context()); err != nil {
				rs.fail(w, r, err)
				return
			}
		}
		rs.writeEvents(w, r, f, q.text[0], q.given[0], int(q.n[1]), key)
	})
}

// validCursor is f.Valid; without a feed no cursor is valid.
func validCursor(f *events.Feed) func(string) bool {
	if f == nil {
		return func(string) bool { return false }
	}
	return f.Valid
}

// errNoFeed is an events request to an edge built without the mode's feed
// (Config.Events): a fault of the wiring, never of the partner.
var errNoFeed = &upstream.Error{Kind: upstream.Internal, Err: errors.New("edge: no events feed for this mode")}

// handleGetProperty answers GET /v1/properties/{propertyId}. An id the key
// is not granted answers 404 before the PMS is asked, so a key can neither
// learn that a property exists nor make the edge fetch it.
func handleGetProperty(rs responder, cats catalogs) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := parseQuery(r.URL.RawQuery, nil); err != nil {
			rs.fail(w, r, err)
			return
		}
		id, ok := mapping.ParseID(chi.URLParam(r, "propertyId"))
		if !ok {
			rs.fail(w, r, &problem.Error{Code: problem.InvalidPathParameter,
				Detail: "propertyId must be a UUID.",
				Errors: []problem.FieldError{{Field: "propertyId", Code: problem.FieldInvalidFormat,
					Detail: "propertyId must be a UUID in the 8-4-4-4-12 hexadecimal form."}}})
			return
		}
		key := Key(r.Context())
		if !key.CanSee(id) {
			rs.fail(w, r, propertyNotFound())
			return
		}
		item, err := cats.of(key).Property(r.Context(), id)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		rs.writeOne(w, r, item.JSON)
	})
}

// propertyNotFound is a get of an id the key cannot see, worded as the
// PMS's own 404 is (upstreamProblems): a partner cannot tell which.
func propertyNotFound() *problem.Error {
	return problem.New(problem.PropertyNotFound, propertyNotFoundDetail)
}

// page is one page of a list, with the numbers of its pagination object.
type page struct {
	// joined is the page's items, pre-joined by the snapshot, for a key
	// that sees every property; items is the page otherwise.
	joined       []byte
	snap         *upstream.Snapshot // the page's snapshot; joined is its active items [from, to)
	from, to     int
	items        []*upstream.Item
	number, size int64
	total        int64
	next         string // meta.events.next; "": no feed
}

// pageOf selects page number of size from the active items of snap the key
// may see; cur is the current snapshot (snap, or the one that replaced a
// held snap: its joined JSON serves a held page whose properties are
// unchanged).
func pageOf(snap, cur *upstream.Snapshot, key *keys.Key, number, size int64) page {
	p := page{number: number, size: size}
	start := (number - 1) * size
	if key.AllProperties() {
		p.total = int64(len(snap.Active))
		if start < p.total {
			p.snap, p.from, p.to = snap, int(start), int(min(start+size, p.total))
			switch {
			case snap.Joined():
				p.joined = snap.ActiveJSON(p.from, p.to)
			default: // a held snapshot (asOf): a run of the current one, or item by item
				if p.joined = cur.JoinedRun(snap.Active[p.from:p.to], p.from); p.joined == nil {
					p.items = snap.Active[p.from:p.to]
				}
			}
		}
		return p
	}
	p.snap = snap
	for _, it := range snap.Active {
		if !key.CanSee(it.ID) {
			continue
		}
		if p.total >= start && p.total < start+size {
			p.items = append(p.items, it)
		}
		p.total++
	}
	return p
}
