package fleet

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMaxPayload bounds a published payload.
const DefaultMaxPayload = 8 << 20

// Errors of Store.Fetch.
var (
	ErrNotFound = errors.New("fleet: no snapshot published")
	ErrTooLarge = errors.New("fleet: published snapshot too large")
)

// frameHeader: a frame version byte, the version (8 bytes), the publish
// time (Unix ms, 8 bytes), then the payload.
const frameHeader = 17

// Store is the lease-and-publish store of shared snapshots. Each Store has
// its own lease token: it releases only leases it holds.
type Store struct {
	c          *Client
	token      string
	maxPayload int
	now        func() time.Time
}

// NewStore returns a store on c; maxPayload <= 0 means DefaultMaxPayload;
// now (nil: time.Now) stamps publications.
func NewStore(c *Client, maxPayload int, now func() time.Time) *Store {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	if now == nil {
		now = time.Now
	}
	return &Store{c: c, token: hex.EncodeToString(b[:]), maxPayload: maxPayload, now: now}
}

// Lease takes name's lease for ttl if nobody holds it (SET NX PX).
func (s *Store) Lease(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	var won bool
	err := s.c.Do(ctx, func(ctx context.Context, rdb *redis.Client) (err error) {
		won, err = rdb.SetNX(ctx, name+":lease", s.token, ttl).Result()
		return err
	})
	return won, err
}

var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Release gives up name's lease if this store holds it.
func (s *Store) Release(ctx context.Context, name string) error {
	return s.c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
		return releaseScript.Run(ctx, rdb, []string{name + ":lease"}, s.token).Err()
	})
}

// Publish stores payload as name's snapshot of version for ttl.
func (s *Store) Publish(ctx context.Context, name string, version int64, payload []byte, ttl time.Duration) error {
	if len(payload) > s.maxPayload {
		return ErrTooLarge
	}
	frame := make([]byte, frameHeader, frameHeader+len(payload))
	frame[0] = 1
	binary.BigEndian.PutUint64(frame[1:9], uint64(version))
	binary.BigEndian.PutUint64(frame[9:17], uint64(s.now().UnixMilli()))
	frame = append(frame, payload...)
	return s.c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
		return rdb.Set(ctx, name+":data", frame, ttl).Err()
	})
}

// Fetch returns name's published payload, its version and when it was
// published. It reads at most the payload bound (GETRANGE): a larger value
// is ErrTooLarge, a malformed one ErrCorrupt, none ErrNotFound.
func (s *Store) Fetch(ctx context.Context, name string) ([]byte, int64, time.Time, error) {
	var b []byte
	err := s.c.Do(ctx, func(ctx context.Context, rdb *redis.Client) (err error) {
		b, err = rdb.GetRange(ctx, name+":data", 0, int64(frameHeader+s.maxPayload)).Bytes()
		return err
	})
	switch {
	case err != nil:
		return nil, 0, time.Time{}, err
	case len(b) == 0:
		return nil, 0, time.Time{}, ErrNotFound
	case len(b) > frameHeader+s.maxPayload:
		return nil, 0, time.Time{}, ErrTooLarge
	case len(b) < frameHeader || b[0] != 1:
		return nil, 0, time.Time{}, ErrCorrupt
	}
	version := int64(binary.BigEndian.Uint64(b[1:9]))
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(b[9:17]))).UTC()
	return b[frameHeader:], version, at, nil
}
