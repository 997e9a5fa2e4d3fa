package redishooks

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// change applies fn to the endpoint id as read and verified, and writes
// the result back signed if the value is still the one read; when it is
// not (another member wrote meanwhile), it reads again and fn decides
// again on what is there now. fn reporting no change writes nothing.
func (s *Store) change(ctx context.Context, id string, fn func(e *webhooks.Endpoint) (bool, error)) (webhooks.Endpoint, error) {
	for range tries {
		old, e, err := s.read(ctx, id)
		if err != nil {
			return webhooks.Endpoint{}, err
		}
		changed, err := fn(&e.ep)
		if err != nil || !changed {
			return e.ep, err
		}
		v, err := s.encode(e.seq, &e.ep)
		if err != nil {
			return webhooks.Endpoint{}, err
		}
		var won int64
		err = do(ctx, s.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
			won, err = swapScript.Run(ctx, rdb, []string{s.hash}, id, old, v).Int64()
			return err
		})
		if err != nil {
			return webhooks.Endpoint{}, err
		}
		if won == 1 {
			return e.ep, nil
		}
	}
	return webhooks.Endpoint{}, errBusy
}

// SetProgress implements webhooks.Store.
func (s *Store) SetProgress(ctx context.Context, id, from string, p webhooks.Progress) error {
	_, err := s.change(ctx, id, webhooks.Progressed(from, p))
	return err
}

// Disable implements webhooks.Store.
func (s *Store) Disable(ctx context.Context, id, from, reason string, at time.Time) error {
	_, err := s.change(ctx, id, webhooks.Disabled(from, reason, at))
	return err
}

// Enable implements webhooks.Registry.
func (s *Store) Enable(ctx context.Context, id, after string) (webhooks.Endpoint, error) {
	return s.change(ctx, id, webhooks.Enabled(after))
}
