// Package feedsource reads the edge's feed of property changes
// (upstream/events) for webhooks' delivery (upstream/webhooks): a
// webhooks.Source whose events are, for each endpoint, those GET
// /v1/events serves the endpoint's key, with the same bytes
// (docs/webhooks.md, "The seams for what comes next").
package feedsource

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Access is what an endpoint's key may receive now.
type Access struct {
	// Key names the key record that holds the endpoint now (a rotated
	// key's successor): a change of holder forgets what was skipped for
	// the one before.
	Key string
	// Feed is the feed of the key's mode. Required.
	Feed *events.Feed
	// Viewer selects the events the key may see (its property grants), as
	// for GET /v1/events. Required.
	Viewer events.Viewer
}

// Keys tells what the key keyID (an endpoint's KeyID) may receive now;
// false while it receives nothing: suspended, revoked, expired, of another
// brand, or of a mode this edge has no feed of.
type Keys func(keyID string) (Access, bool)

// Source is the webhooks.Source of the edge's feeds. Its zero value is not
// usable: Keys is required.
type Source struct {
	// Keys resolves an endpoint's key. Required.
	Keys Keys

	mu      sync.Mutex
	skipped map[string]skip // by endpoint id
}

// skip is how far the feed was examined after an endpoint's position
// without finding an event its key may see: the next read starts there,
// so an endpoint of a key granted a few properties does not scan the same
// events again at every poll.
type skip struct {
	key, after, to string
}

var _ webhooks.Source = (*Source)(nil)

// Read implements webhooks.Source: the events after after (an event id or
// a position the feed issued; "": the oldest held) that ep's key may see,
// at most limit, each with the span of the walk that made it when the
// feed kept one (events.Event.Walk: each attempt's span links to it). webhooks.ErrPaused while the key receives nothing,
// webhooks.ErrExpired once the feed dropped after; a position the feed
// does not know (yet: a fleet member behind) and a feed not read yet are
// other errors, tried again at the next poll.
func (s *Source) Read(ctx context.Context, ep *webhooks.Endpoint, after string, limit int) ([]webhooks.Event, error) {
	acc, ok := s.Keys(ep.KeyID)
	if !ok {
		return nil, webhooks.ErrPaused
	}
	from := after
	s.mu.Lock()
	if sk, ok := s.skipped[ep.ID]; ok && sk.key == acc.Key && sk.after == after {
		from = sk.to
	}
	s.mu.Unlock()
	for {
		evs, next, err := acc.Feed.Read(ctx, from, from != "", limit, acc.Viewer)
		switch {
		case errors.Is(err, events.ErrCursorExpired):
			return nil, fmt.Errorf("%w: %w", webhooks.ErrExpired, err)
		case err != nil:
			return nil, err
		case len(evs) > 0:
			s.forget(ep.ID)
			out := make([]webhooks.Event, len(evs))
			for i, e := range evs {
				out[i] = webhooks.Event{ID: e.ID, OccurredAt: e.OccurredAt, Body: e.JSON, Walk: e.Walk}
			}
			return out, nil
		case next == "" || next == from:
			return nil, nil // up to date
		}
		// Events the key may not see, and maybe more after them.
		from = next
		s.remember(ep.ID, skip{key: acc.Key, after: after, to: next})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (s *Source) remember(id string, sk skip) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.skipped == nil {
		s.skipped = map[string]skip{}
	}
	s.skipped[id] = sk
}

func (s *Source) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.skipped, id)
}

// ErrNoAccess is Position for a key that receives nothing now.
var ErrNoAccess = errors.New("feedsource: the key receives no events now")

// Position is where an endpoint created now by the key keyID starts: the
// feed of its mode's position now (events.Feed.Position), so it receives
// the changes that come after it exists, not the feed's history.
func (s *Source) Position(ctx context.Context, keyID string) (string, error) {
	acc, ok := s.Keys(keyID)
	if !ok {
		return "", ErrNoAccess
	}
	return acc.Feed.Position(ctx)
}
