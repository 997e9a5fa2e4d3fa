package webhooks

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Status is an endpoint's state: enabled endpoints are delivered to.
type Status string

// The statuses of an endpoint, as the API shows them.
const (
	StatusEnabled  Status = "enabled"
	StatusDisabled Status = "disabled"
)

// MaxPerKey is how many endpoints one key may have.
const MaxPerKey = 10

// Errors of a Store and a Source. The edge turns the first four into
// problems (docs/webhooks.md): ErrNotFound is 404
// WEBHOOK_ENDPOINT_NOT_FOUND, ErrExists 409 WEBHOOK_ENDPOINT_EXISTS,
// ErrLimit 409 WEBHOOK_ENDPOINT_LIMIT, ErrExpired 410
// EVENTS_CURSOR_EXPIRED.
var (
	// ErrNotFound is an endpoint that does not exist (or was deleted).
	ErrNotFound = errors.New("webhooks: no such endpoint")
	// ErrExists is a second endpoint of one key with the same URL.
	ErrExists = errors.New("webhooks: the key has an endpoint with this url")
	// ErrLimit is a key's endpoint past MaxPerKey.
	ErrLimit = errors.New("webhooks: the key has the most endpoints it may have")
	// ErrExpired is a position the feed no longer holds: events after it
	// were dropped, so delivery cannot go on from it.
	ErrExpired = errors.New("webhooks: the feed no longer holds the position")
	// ErrPaused is a Source's answer for an endpoint that receives
	// nothing for now (its key suspended, revoked or expired): it waits,
	// no attempt made or counted, and resumes where it stopped.
	ErrPaused = errors.New("webhooks: the endpoint's key receives nothing for now")
	// ErrConflict is progress recorded against a position the endpoint
	// has left (another writer moved it, or it was disabled meanwhile).
	ErrConflict = errors.New("webhooks: the endpoint's progress moved")
	// ErrStoreUnavailable wraps a Store's or Lease's error that means the
	// store is away (a fleet's Redis down, its breaker open, writes
	// refused): its client logs that already, so the Deliverer only notes
	// it at debug level, and waits.
	ErrStoreUnavailable = errors.New("webhooks: the store is unavailable")
)

// Endpoint is a partner's endpoint and where its delivery stands.
type Endpoint struct {
	ID          string // "whe_..."
	KeyID       string // the key that created it: its brand, mode and grants select the events
	URL         string
	Description string
	Secret      string // "whsec_...": shown once, when created
	CreatedAt   time.Time

	Status         Status
	DisabledReason string    // why it was disabled (disabledReason): a Reason, empty while enabled
	DisabledAt     time.Time // zero while enabled

	Progress
}

// Progress is where an endpoint's delivery stands: events after After are
// yet to be delivered, in order; the first of them has failed Failures
// attempts and is tried next at NextAttempt.
type Progress struct {
	// After is the last delivered event's id, or the feed's position when
	// the endpoint was created ("": its start).
	After string
	// Failures counts the failed attempts at the first undelivered event;
	// 0 once it is delivered.
	Failures int
	// NextAttempt is when that event is tried next; zero: at once.
	NextAttempt time.Time
}

// Event is one event of the feed as delivered.
type Event struct {
	// ID is the event's id (its cursor): webhook-id, and the position
	// delivery resumes after once it is delivered.
	ID string
	// OccurredAt is when the change was seen (the event's occurredAt):
	// the delivery lag is measured from it.
	OccurredAt time.Time
	// Body is the Event object's JSON exactly as GET /v1/events serves
	// it; sent and signed as is.
	Body []byte
	// Walk, when valid, is the span of the walk that made the event: each
	// attempt's span links to it.
	Walk trace.SpanContext
}

// Source reads the events an endpoint is to receive: those after after
// (an event id or a position the feed issued; "": the oldest held) that
// ep's key may see, in feed order, at most limit. No more: none. A
// position the feed dropped is ErrExpired; a key that receives nothing
// for now is ErrPaused.
type Source interface {
	Read(ctx context.Context, ep *Endpoint, after string, limit int) ([]Event, error)
}

// Store keeps endpoints and their progress where the Deliverer finds them.
// Every change of progress names the position it moves from, so that a
// writer that lost the endpoint (deleted, disabled, another member's)
// changes nothing. Safe for concurrent use.
type Store interface {
	// Endpoints is every endpoint, of every key.
	Endpoints(ctx context.Context) ([]Endpoint, error)
	// Endpoint is the endpoint id, or ErrNotFound.
	Endpoint(ctx context.Context, id string) (Endpoint, error)
	// SetProgress replaces the progress of the enabled endpoint id whose
	// After is from with p; ErrNotFound, or ErrConflict when it is not
	// enabled or its After is not from.
	SetProgress(ctx context.Context, id, from string, p Progress) error
	// Disable disables the enabled endpoint id whose After is from, with
	// reason, at at; its After stays, so Enable resumes from there.
	// ErrNotFound or ErrConflict as SetProgress.
	Disable(ctx context.Context, id, from, reason string, at time.Time) error
}

// Registry is what the API's routes do with endpoints: a key's list,
// created, deleted and enabled again.
type Registry interface {
	Store
	// Create adds ep (enabled, its ID and Secret set): ErrExists when its
	// key has one with the same URL, ErrLimit when it has MaxPerKey.
	Create(ctx context.Context, ep Endpoint) error
	// List is the endpoints of key keyID, oldest first.
	List(ctx context.Context, keyID string) ([]Endpoint, error)
	// Delete removes the endpoint id: ErrNotFound when none.
	Delete(ctx context.Context, id string) error
	// Enable enables the endpoint id again, delivery resuming after after
	// (its own After, the first undelivered event, unless the feed lost
	// it), its failures forgotten. An enabled endpoint is left as it is.
	Enable(ctx context.Context, id, after string) (Endpoint, error)
}
