package redishooks

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Lease is one member's side of the fleet's endpoint leases
// (docs/webhooks.md, "The seams for what comes next"): a key per
// endpoint holding the member's id, set if absent with the lease's
// expiry, extended and deleted only by the member it names. A member
// killed releases nothing: its keys expire, and another member takes
// over. Safe for concurrent use.
type Lease struct {
	c      *redisconn.Client
	prefix string
	member string
}

var _ webhooks.Lease = (*Lease)(nil)

// LeaseConfig is a member's leases of a brand's endpoints.
type LeaseConfig struct {
	Client *redisconn.Client // required
	Brand  string            // names the keys, beside the brand's endpoints (Config.Brand)
	// Member names this member in the keys it holds; "": a random one,
	// new with each Lease (a restarted member does not take back the
	// leases of the one before: they expire).
	Member string
}

// NewLease returns cfg's member's leases.
func NewLease(cfg LeaseConfig) (*Lease, error) {
	if cfg.Client == nil {
		return nil, errors.New("redishooks: no Redis client")
	}
	if cfg.Member == "" {
		cfg.Member = rand.Text()
	}
	return &Lease{c: cfg.Client, prefix: prefix(cfg.Brand) + "l:", member: cfg.Member}, nil
}

// Member is the id this member holds leases under.
func (l *Lease) Member() string { return l.member }

// Hold implements webhooks.Lease: one script, so taking and extending are
// one round trip and the check and the write cannot be split. A reply
// lost after Redis set the key leaves it this member's: the next Hold
// extends it rather than finding it held against itself.
func (l *Lease) Hold(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	var n int64
	err := do(ctx, l.c, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		n, err = holdScript.Run(ctx, rdb, []string{l.key(id)}, l.member, max(ttl.Milliseconds(), 1)).Int64()
		return err
	})
	return n == 1, err
}

// Release implements webhooks.Lease.
func (l *Lease) Release(ctx context.Context, id string) error {
	return do(ctx, l.c, func(ctx context.Context, rdb redis.UniversalClient) error {
		return releaseScript.Run(ctx, rdb, []string{l.key(id)}, l.member).Err()
	})
}

func (l *Lease) key(id string) string { return l.prefix + redisconn.KeyPart(id) }
