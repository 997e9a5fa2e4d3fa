package boltwebhooks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Store is the endpoints' file: a webhooks.Registry answering as
// webhooks.Memory does, kept across restarts. bbolt runs one writing
// transaction at a time, so each compare and set (read, check, write) is
// one transaction and needs no lock of its own. Safe for concurrent use.
type Store struct {
	db       *bolt.DB
	path     string
	dec      decoded
	progress atomic.Int64 // SetProgress calls under way
}

var _ webhooks.Registry = (*Store)(nil)

// stored is an endpoint read from the file, with its order of creation.
type stored struct {
	ep  webhooks.Endpoint
	seq uint64
}

// all is every endpoint in the file, in order of creation.
func (s *Store) all(tx *bolt.Tx) ([]stored, error) {
	var out []stored
	err := tx.Bucket(bucket).ForEach(func(k, v []byte) error {
		ep, seq, err := s.dec.decode(string(k), v)
		if err != nil {
			return fmt.Errorf("%w (endpoint %s)", err, k)
		}
		out = append(out, stored{ep, seq})
		return nil
	})
	slices.SortFunc(out, func(a, b stored) int { return cmp.Compare(a.seq, b.seq) })
	return out, err
}

// Endpoints implements webhooks.Store.
func (s *Store) Endpoints(context.Context) ([]webhooks.Endpoint, error) {
	return s.list(func(webhooks.Endpoint) bool { return true })
}

// List implements webhooks.Registry.
func (s *Store) List(_ context.Context, keyID string) ([]webhooks.Endpoint, error) {
	return s.list(func(e webhooks.Endpoint) bool { return e.KeyID == keyID })
}

func (s *Store) list(keep func(webhooks.Endpoint) bool) ([]webhooks.Endpoint, error) {
	var out []webhooks.Endpoint
	err := s.db.View(func(tx *bolt.Tx) error {
		eps, err := s.all(tx)
		for _, e := range eps {
			if keep(e.ep) {
				out = append(out, e.ep)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Endpoint implements webhooks.Store.
func (s *Store) Endpoint(_ context.Context, id string) (webhooks.Endpoint, error) {
	var ep webhooks.Endpoint
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get([]byte(id))
		if v == nil {
			return webhooks.ErrNotFound
		}
		var err error
		ep, _, err = s.dec.decode(id, v)
		return err
	})
	return ep, err
}

// change applies fn to the endpoint id in one transaction and writes it
// back when fn reports a change; fn's error writes nothing.
func (s *Store) change(id string, fn func(e *webhooks.Endpoint) (bool, error)) (webhooks.Endpoint, error) {
	return s.changeIn(s.db.Update, id, fn)
}

// changeIn is change in a transaction run by update: DB.Update, or
// DB.Batch, which may run it more than once (it reads before it writes,
// so running it again is the same change).
func (s *Store) changeIn(update func(func(*bolt.Tx) error) error, id string, fn func(e *webhooks.Endpoint) (bool, error)) (webhooks.Endpoint, error) {
	var ep webhooks.Endpoint
	err := update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		v := b.Get([]byte(id))
		if v == nil {
			return webhooks.ErrNotFound
		}
		var seq uint64
		var err error
		if ep, seq, err = s.dec.decode(id, v); err != nil {
			return err
		}
		changed, err := fn(&ep)
		if err != nil || !changed {
			return err
		}
		if v, err = encode(seq, &ep); err != nil {
			return err
		}
		s.dec.keep(id, v, ep, seq)
		return b.Put([]byte(id), v)
	})
	return ep, err
}

// SetProgress implements webhooks.Store. It returns once p is on disk.
// Alone, it commits at once, so an endpoint catching up alone keeps its
// pace; while other endpoints record theirs, it joins them in one
// transaction, committed progressDelay after the first of them (bbolt's
// Batch): a walk's events go to every endpoint at once, and a commit (two
// fdatasyncs) per delivery was most of a delivery's CPU
// (docs/operations.md, "What deliveries cost").
func (s *Store) SetProgress(_ context.Context, id, from string, p webhooks.Progress) error {
	update := s.db.Update
	if s.progress.Add(1) > 1 {
		update = s.db.Batch
	}
	defer s.progress.Add(-1)
	_, err := s.changeIn(update, id, webhooks.Progressed(from, p))
	return err
}

// Disable implements webhooks.Store.
func (s *Store) Disable(_ context.Context, id, from, reason string, at time.Time) error {
	_, err := s.change(id, webhooks.Disabled(from, reason, at))
	return err
}

// Enable implements webhooks.Registry.
func (s *Store) Enable(_ context.Context, id, after string) (webhooks.Endpoint, error) {
	return s.change(id, webhooks.Enabled(after))
}

// Create implements webhooks.Registry.
func (s *Store) Create(_ context.Context, ep webhooks.Endpoint) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b.Get([]byte(ep.ID)) != nil {
			return fmt.Errorf("boltwebhooks: endpoint id %s is in use", ep.ID)
		}
		eps, err := s.all(tx)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range eps {
			if e.ep.KeyID != ep.KeyID {
				continue
			}
			if e.ep.URL == ep.URL {
				return webhooks.ErrExists
			}
			n++
		}
		if n >= webhooks.MaxPerKey {
			return webhooks.ErrLimit
		}
		ep.Status, ep.DisabledReason, ep.DisabledAt = webhooks.StatusEnabled, "", time.Time{}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		v, err := encode(seq, &ep)
		if err != nil {
			return err
		}
		s.dec.keep(ep.ID, v, ep, seq)
		return b.Put([]byte(ep.ID), v)
	})
}

// Delete implements webhooks.Registry.
func (s *Store) Delete(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b.Get([]byte(id)) == nil {
			return webhooks.ErrNotFound
		}
		s.dec.forget(id)
		return b.Delete([]byte(id))
	})
}
