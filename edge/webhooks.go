package edge

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// webhookDeps is what the webhook endpoints' routes need (docs/contract.md
// section 26): the registry, and the feeds in which an endpoint starts
// (created: after the feed's position now, so it receives what changes
// after it exists) and resumes (enabled: after its own position, if the
// feed still holds it).
type webhookDeps struct {
	reg       webhooks.Registry // nil: the routes answer 503 naming EDGE_DATA_DIR
	cats      catalogs
	feeds     feeds
	now       func() time.Time
	allowHTTP bool   // Config.WebhookAllowHTTP
	wake      func() // Config.WebhooksChanged, or a no-op
	// chain is the ids whose endpoints a key holds: its own and, with a
	// KeyStore that knows rotations (keyChain), the keys it replaced.
	chain func(id string) []string
}

// keyChain is a KeyStore that knows rotations (keys.Store): a rotated
// key's successor keeps its endpoints (docs/webhooks.md).
type keyChain interface {
	Predecessors(id string) []string
}

// chainOf is webhookDeps.chain for ks.
func chainOf(ks KeyStore) func(id string) []string {
	kc, ok := ks.(keyChain)
	if !ok {
		return func(id string) []string { return []string{id} }
	}
	return func(id string) []string { return append([]string{id}, kc.Predecessors(id)...) }
}

// endpoints lists the endpoints key holds, oldest first: its own and
// those of the keys it replaced.
func (d webhookDeps) endpoints(ctx context.Context, key *keys.Key) ([]webhooks.Endpoint, error) {
	var all []webhooks.Endpoint
	for _, id := range d.chain(key.ID) {
		eps, err := d.reg.List(ctx, id)
		if err != nil {
			return nil, err
		}
		all = append(all, eps...)
	}
	slices.SortStableFunc(all, func(a, b webhooks.Endpoint) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return all, nil
}

// inherited checks a new endpoint's url against those key holds from the
// keys it replaced (the registry checks the key's own): one endpoint per
// url, at most webhooks.MaxPerKey in all.
func (d webhookDeps) inherited(ctx context.Context, key *keys.Key, url string) error {
	if len(d.chain(key.ID)) == 1 {
		return nil
	}
	eps, err := d.endpoints(ctx, key)
	if err != nil {
		return err
	}
	for i := range eps {
		if eps[i].URL == url {
			return webhooks.ErrExists
		}
	}
	if len(eps) >= webhooks.MaxPerKey {
		return webhooks.ErrLimit
	}
	return nil
}

// errNoRegistry is a webhook route of an edge without a place to keep
// endpoints (Config.Webhooks nil).
var errNoRegistry = &problem.Error{Code: problem.ServiceUnavailable,
	Detail: "Webhook endpoints are not available on this deployment: the operator has not set EDGE_DATA_DIR (a single edge) or a fleet's Redis, where endpoints are kept."}

// handleCreateWebhookEndpoint answers POST /v1/webhook-endpoints: 201,
// Location and the endpoint with its secret, shown this once.
func handleCreateWebhookEndpoint(rs responder, d webhookDeps) http.Handler {
	fields := []string{"url", "description"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.ready(rs, w, r) {
			return
		}
		members, err := readJSONBody(w, r, fields)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		in, err := d.endpointInput(members)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		key := Key(r.Context())
		if err := d.inherited(r.Context(), key, in.url); err != nil {
			rs.fail(w, r, err)
			return
		}
		after, err := d.head(r.Context(), key)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		ep := webhooks.Endpoint{ID: newEndpointID(), KeyID: key.ID, URL: in.url, Description: in.description,
			Secret: webhooks.NewSecret(), CreatedAt: d.now().UTC().Truncate(time.Millisecond),
			Status: webhooks.StatusEnabled, Progress: webhooks.Progress{After: after}}
		if err := d.reg.Create(r.Context(), ep); err != nil {
			rs.fail(w, r, err)
			return
		}
		d.wake()
		w.Header()["Location"] = []string{webhookEndpointsPath + "/" + ep.ID}
		rs.writeEndpoint(w, r, http.StatusCreated, &ep, true)
	})
}

// handleListWebhookEndpoints answers GET /v1/webhook-endpoints: the key's
// endpoints, oldest first, without secrets. A key has at most
// webhooks.MaxPerKey of them: one page.
func handleListWebhookEndpoints(rs responder, d webhookDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.ready(rs, w, r) {
			return
		}
		eps, err := d.endpoints(r.Context(), Key(r.Context()))
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		list := make([]endpointJSON, len(eps))
		for i := range eps {
			list[i] = endpointView(&eps[i], false)
		}
		b, err := json.Marshal(list)
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		rs.writeOne(w, r, b)
	})
}

// handleGetWebhookEndpoint answers GET /v1/webhook-endpoints/{endpointId}.
func handleGetWebhookEndpoint(rs responder, d webhookDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep, ok := d.owned(rs, w, r)
		if ok {
			rs.writeEndpoint(w, r, http.StatusOK, &ep, false)
		}
	})
}

// handleDeleteWebhookEndpoint answers DELETE
// /v1/webhook-endpoints/{endpointId}: 204. Delivery stops at the
// Deliverer's next look at the store.
func handleDeleteWebhookEndpoint(rs responder, d webhookDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep, ok := d.owned(rs, w, r)
		if !ok {
			return
		}
		if err := d.reg.Delete(r.Context(), ep.ID); err != nil {
			rs.fail(w, r, err)
			return
		}
		d.wake()
		w.WriteHeader(http.StatusNoContent)
	})
}

// handleEnableWebhookEndpoint answers POST
// /v1/webhook-endpoints/{endpointId}/enable: a disabled endpoint resumes
// from its first undelivered event, its failures forgotten; an enabled one
// is answered as it is. When the feed no longer holds the endpoint's
// position, 410 EVENTS_CURSOR_EXPIRED, and the endpoint, still disabled
// (disabledReason events_expired), is moved to the feed's position now: the
// partner lists the properties again and enables it once more, delivery
// starting from then (docs/contract.md section 26).
func handleEnableWebhookEndpoint(rs responder, d webhookDeps) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ep, ok := d.owned(rs, w, r)
		if !ok {
			return
		}
		if ep.Status == webhooks.StatusEnabled {
			rs.writeEndpoint(w, r, http.StatusOK, &ep, false)
			return
		}
		ctx, key := r.Context(), Key(r.Context())
		err := d.held(ctx, key, ep.After)
		if errors.Is(err, webhooks.ErrExpired) {
			err = d.restart(ctx, key, ep.ID, err)
		}
		if err == nil {
			ep, err = d.reg.Enable(ctx, ep.ID, ep.After)
		}
		if err != nil {
			rs.fail(w, r, err)
			return
		}
		d.wake()
		rs.writeEndpoint(w, r, http.StatusOK, &ep, false)
	})
}

// ready answers 503 when the edge keeps no endpoints, then checks the
// query (the routes take no parameter).
func (d webhookDeps) ready(rs responder, w http.ResponseWriter, r *http.Request) bool {
	err := error(nil)
	if d.reg == nil {
		err = errNoRegistry
	} else if _, qerr := parseQuery(r.URL.RawQuery, nil); qerr != nil {
		err = qerr
	}
	if err != nil {
		rs.fail(w, r, err)
		return false
	}
	return true
}

// owned is the endpoint the path names when the request's key created it;
// otherwise 404 WEBHOOK_ENDPOINT_NOT_FOUND, whether it does not exist or
// is another key's (never revealing which).
func (d webhookDeps) owned(rs responder, w http.ResponseWriter, r *http.Request) (webhooks.Endpoint, bool) {
	if !d.ready(rs, w, r) {
		return webhooks.Endpoint{}, false
	}
	id := chi.URLParam(r, "endpointId")
	var ep webhooks.Endpoint
	err := webhooks.ErrNotFound
	if validEndpointID(id) {
		ep, err = d.reg.Endpoint(r.Context(), id)
	}
	if err == nil && !slices.Contains(d.chain(Key(r.Context()).ID), ep.KeyID) {
		err = webhooks.ErrNotFound
	}
	if err != nil {
		rs.fail(w, r, err)
		return webhooks.Endpoint{}, false
	}
	return ep, true
}

// head is the position of the feed of key's mode now (events.Feed.Position:
// after every event it holds and the walk it serves), where an endpoint
// created now starts.
func (d webhookDeps) head(ctx context.Context, key *keys.Key) (string, error) {
	f := d.feeds.of(key)
	if f == nil {
		return "", errNoFeed
	}
	// The snapshot first, as a list does: before the first walk it waits
	// for it (or answers 503), and the feed has started once it is served.
	if _, err := d.cats.of(key).Snapshot(ctx); err != nil {
		return "", err
	}
	return f.Position(ctx)
}

// held is nil when the feed of key's mode still holds the events after
// after, webhooks.ErrExpired when it dropped them (or, having started
// again, never issued after).
func (d webhookDeps) held(ctx context.Context, key *keys.Key, after string) error {
	f := d.feeds.of(key)
	if f == nil {
		return errNoFeed
	}
	_, _, err := f.AppendPage(ctx, nil, after, after != "", 0, key)
	if errors.Is(err, events.ErrCursorExpired) || errors.Is(err, events.ErrCursorUnknown) {
		return errors.Join(webhooks.ErrExpired, err)
	}
	return err
}

// restart moves the disabled endpoint id to the feed's position now and
// leaves it disabled with the reason events_expired (through Enable and
// Disable, the Registry's own steps), then returns expired, the answer. A
// Deliverer that took the endpoint up between the two steps keeps it
// enabled from now: the next enable finds it so.
func (d webhookDeps) restart(ctx context.Context, key *keys.Key, id string, expired error) error {
	head, err := d.head(ctx, key)
	if err != nil {
		return err
	}
	if _, err := d.reg.Enable(ctx, id, head); err != nil {
		return err
	}
	err = d.reg.Disable(ctx, id, head, string(webhooks.EventsExpired), d.now())
	if err != nil && !errors.Is(err, webhooks.ErrConflict) {
		return err
	}
	return expired
}

// webhookEndpointsPath is the collection's path: Location is it and the id.
const webhookEndpointsPath = "/v1/webhook-endpoints"

// endpointIDChars is the length of an endpoint id after "whe_": 15 random
// bytes in lower-case base32, 120 bits.
const endpointIDChars = 24

const endpointIDAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

var endpointIDEncoding = base32.NewEncoding(endpointIDAlphabet).WithPadding(base32.NoPadding)

// newEndpointID is "whe_" and 24 characters from crypto/rand (which never
// fails).
func newEndpointID() string {
	var b [15]byte
	_, _ = rand.Read(b[:])
	return "whe_" + endpointIDEncoding.EncodeToString(b[:])
}

// validEndpointID reports whether id could be one newEndpointID made: any
// other is not found without asking the registry.
func validEndpointID(id string) bool {
	rest, ok := strings.CutPrefix(id, "whe_")
	if !ok || len(rest) != endpointIDChars {
		return false
	}
	for i := range len(rest) {
		if !strings.ContainsRune(endpointIDAlphabet, rune(rest[i])) {
			return false
		}
	}
	return true
}

// endpointJSON is the WebhookEndpoint object (docs/partner-api.md), its
// members in the documented order.
type endpointJSON struct {
	Object         string  `json:"object"`
	ID             string  `json:"id"`
	URL            string  `json:"url"`
	Description    *string `json:"description"`
	Status         string  `json:"status"`
	CreatedAt      string  `json:"createdAt"`
	DisabledReason *string `json:"disabledReason"`
	Secret         string  `json:"secret,omitempty"` // the create answer's only
}

func endpointView(ep *webhooks.Endpoint, withSecret bool) endpointJSON {
	v := endpointJSON{Object: "webhook_endpoint", ID: ep.ID, URL: ep.URL, Status: string(ep.Status),
		CreatedAt: string(mapping.AppendTime(nil, ep.CreatedAt))}
	if ep.Description != "" {
		v.Description = &ep.Description
	}
	if ep.Status != webhooks.StatusEnabled && ep.DisabledReason != "" {
		v.DisabledReason = &ep.DisabledReason
	}
	if withSecret {
		v.Secret = ep.Secret
	}
	return v
}

// writeEndpoint answers {"data": WebhookEndpoint, "meta": {...}} with
// status.
func (s responder) writeEndpoint(w http.ResponseWriter, r *http.Request, status int, ep *webhooks.Endpoint, withSecret bool) {
	data, err := json.Marshal(endpointView(ep, withSecret))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b := append([]byte(`{"data":`), data...)
	b = s.appendMeta(b, r, nil)
	writeJSON(w, status, append(b, '}'))
}
