// Package redishooks keeps a fleet's webhook endpoints and their progress
// in its Redis (docs/webhooks.md, "Where endpoints and progress live"):
// a webhooks.Registry every member reads and writes, each endpoint signed
// with EDGE_FLEET_SECRET as the fleet's other state is, every change a
// compare and set on the value read (so that of members moving one
// endpoint, one wins), and the Lease by which one member at a time
// delivers an endpoint. Every form of the fleet's Redis works: a brand's
// keys share a hash tag.
package redishooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Config is a brand's endpoints in the fleet's Redis.
type Config struct {
	Client *redisconn.Client // required
	// Secret is EDGE_FLEET_SECRET: it signs every endpoint written (only
	// what verifies under it is read) and seals endpoints' secrets.
	// Required.
	Secret []byte
	Brand  string // names the keys
}

// Store is a brand's endpoints in Redis: a webhooks.Registry answering as
// webhooks.Memory does, shared by the fleet. Safe for concurrent use.
type Store struct {
	c             *redisconn.Client
	hash, counter string
	secret        []byte // signs each value (codec.go)
	seal          sealer // seals each endpoint's secret (seal.go)
}

var _ webhooks.Registry = (*Store)(nil)

// New returns cfg's store.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redishooks: no Redis client")
	}
	if len(cfg.Secret) == 0 {
		return nil, errors.New("redishooks: no fleet secret: endpoints would be neither signed nor verified")
	}
	seal, err := newSealer(cfg.Secret)
	if err != nil {
		return nil, err
	}
	p := prefix(cfg.Brand)
	return &Store{c: cfg.Client, hash: p + "e", counter: p + "n", secret: append([]byte(nil), cfg.Secret...), seal: seal}, nil
}

// prefix is the start of a brand's keys, its hash tag included (wh1: the
// first format of these keys).
func prefix(brand string) string { return "pe:wh1:{" + redisconn.KeyPart(brand) + "}:" }

// tries bounds the compare and sets of one call: each that fails read
// what another writer wrote, so more than a few is a fight, not bad luck.
const tries = 8

var errBusy = errors.New("redishooks: the endpoints kept changing under the write")

// stored is an endpoint read, with its order of creation.
type stored struct {
	ep  webhooks.Endpoint
	seq int64
}

// all reads the counter and every endpoint together, verified, in order
// of creation: one that does not verify fails the read (ErrForged).
func (s *Store) all(ctx context.Context) (counter string, eps []stored, err error) {
	var reply []any
	err = do(ctx, s.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		reply, err = readScript.Run(ctx, rdb, []string{s.hash, s.counter}).Slice()
		return err
	})
	if err != nil {
		return "", nil, err
	}
	kv, _ := reply[1].([]any)
	if len(reply) != 2 || len(kv)%2 != 0 {
		return "", nil, errors.New("redishooks: unexpected reply to the endpoints")
	}
	counter, _ = reply[0].(string)
	for i := 0; i < len(kv); i += 2 {
		id, _ := kv[i].(string)
		v, _ := kv[i+1].(string)
		ep, seq, err := s.decode(id, v)
		if err != nil {
			return "", nil, err
		}
		eps = append(eps, stored{ep, seq})
	}
	slices.SortFunc(eps, func(a, b stored) int { return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(a.ep.ID, b.ep.ID)) })
	return counter, eps, nil
}

func (s *Store) list(ctx context.Context, keep func(webhooks.Endpoint) bool) ([]webhooks.Endpoint, error) {
	_, eps, err := s.all(ctx)
	if err != nil {
		return nil, err
	}
	var out []webhooks.Endpoint
	for _, e := range eps {
		if keep(e.ep) {
			out = append(out, e.ep)
		}
	}
	return out, nil
}

// Endpoints implements webhooks.Store.
func (s *Store) Endpoints(ctx context.Context) ([]webhooks.Endpoint, error) {
	return s.list(ctx, func(webhooks.Endpoint) bool { return true })
}

// List implements webhooks.Registry.
func (s *Store) List(ctx context.Context, keyID string) ([]webhooks.Endpoint, error) {
	return s.list(ctx, func(e webhooks.Endpoint) bool { return e.KeyID == keyID })
}

// read is the endpoint id as stored (its value, for the compare and set)
// and verified.
func (s *Store) read(ctx context.Context, id string) (string, stored, error) {
	var v string
	err := do(ctx, s.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		v, err = rdb.HGet(ctx, s.hash, id).Result()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return "", stored{}, webhooks.ErrNotFound
	}
	if err != nil {
		return "", stored{}, err
	}
	ep, seq, err := s.decode(id, v)
	return v, stored{ep, seq}, err
}

// Endpoint implements webhooks.Store.
func (s *Store) Endpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	_, e, err := s.read(ctx, id)
	return e.ep, err
}

// Create implements webhooks.Registry: the checks on what was read, then
// the endpoint written if no create came between (the counter unmoved).
func (s *Store) Create(ctx context.Context, ep webhooks.Endpoint) error {
	ep.Status, ep.DisabledReason, ep.DisabledAt = webhooks.StatusEnabled, "", time.Time{}
	for range tries {
		counter, eps, err := s.all(ctx)
		if err != nil {
			return err
		}
		n := 0
		for _, e := range eps {
			switch {
			case e.ep.ID == ep.ID:
				return idTaken(ep.ID)
			case e.ep.KeyID != ep.KeyID:
				continue
			case e.ep.URL == ep.URL:
				return webhooks.ErrExists
			}
			n++
		}
		if n >= webhooks.MaxPerKey {
			return webhooks.ErrLimit
		}
		// A counter that is not a number (written by hand) orders this
		// endpoint first; it is set to a number again.
		seq, _ := strconv.ParseInt(counter, 10, 64)
		seq++
		v, err := s.encode(seq, &ep)
		if err != nil {
			return err
		}
		var won int64
		err = do(ctx, s.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
			won, err = createScript.Run(ctx, rdb, []string{s.hash, s.counter}, counter, ep.ID, v, seq).Int64()
			return err
		})
		switch {
		case err != nil:
			return err
		case won == -1: // an endpoint that did not verify, of this id
			return idTaken(ep.ID)
		case won == 1:
			return nil
		}
	}
	return errBusy
}

func idTaken(id string) error { return fmt.Errorf("redishooks: endpoint id %s is in use", id) }

// Delete implements webhooks.Registry. It reads nothing, so it also
// removes an endpoint that does not verify.
func (s *Store) Delete(ctx context.Context, id string) error {
	var n int64
	err := do(ctx, s.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		n, err = rdb.HDel(ctx, s.hash, id).Result()
		return err
	})
	if err == nil && n == 0 {
		return webhooks.ErrNotFound
	}
	return err
}
