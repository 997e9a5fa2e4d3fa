package fleet

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn"

	"github.com/redis/go-redis/v9"
)

// DefaultMaxPayload bounds a published payload.
const DefaultMaxPayload = 8 << 20

// Errors of Store.Fetch.
var (
	ErrNotFound = errors.New("fleet: no snapshot published")
	ErrTooLarge = errors.New("fleet: published snapshot too large")
	// ErrUnauthenticated is a publication whose HMAC does not verify under
	// the store's secret: written by someone without EDGE_FLEET_SECRET (or
	// by an instance with another one, or before docs/contract.md section 15).
	ErrUnauthenticated = errors.New("fleet: published snapshot not authenticated (EDGE_FLEET_SECRET)")
)

// A frame: the frame version byte (2), the version (8 bytes), the publish
// time (Unix ms, 8 bytes), HMAC-SHA256 under the fleet secret of the key
// name, those 17 bytes and the payload (32 bytes), then the payload. The
// key name is in the MAC, so a publication cannot be replayed under
// another brand's or mode's key.
const (
	frameVersion = 2
	frameHeader  = 17
	frameMAC     = sha256.Size
)

// Store is the lease-and-publish store of shared snapshots. Each Store has
// its own lease token: it releases only leases it holds.
type Store struct {
	c          *redisconn.Client
	token      string
	maxPayload int
	secret     []byte
}

// NewStore returns a store on c; maxPayload <= 0 means DefaultMaxPayload;
// secret (EDGE_FLEET_SECRET, the
// same on every instance) signs what Publish writes, and Fetch returns
// only what verifies under it. An empty secret verifies nothing.
func NewStore(c *redisconn.Client, maxPayload int, secret []byte) *Store {
	if maxPayload <= 0 {
		maxPayload = DefaultMaxPayload
	}
	return &Store{c: c, token: rand.Text(), maxPayload: maxPayload, secret: bytes.Clone(secret)}
}

// leaseScript takes a lease for ARGV[1] (the store's token) for ARGV[2]
// ms when nobody holds it, or when ARGV[1] already does: a lease whose
// reply was lost (the call timed out after Redis set it) is still this
// store's to use, not a lock held against itself until it expires.
var leaseScript = redis.NewScript(`local v = redis.call("GET", KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return 1`)

// Lease takes name's lease for ttl if nobody else holds it; taking it
// again while holding it extends it.
func (s *Store) Lease(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	var won bool
	err := s.c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) error {
		n, err := leaseScript.Run(ctx, rdb, []string{name + ":lease"}, s.token, max(ttl.Milliseconds(), 1)).Int()
		won = n == 1
		return err
	})
	return won, err
}

var releaseScript = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Release gives up name's lease if this store holds it.
func (s *Store) Release(ctx context.Context, name string) error {
	return s.c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) error {
		return releaseScript.Run(ctx, rdb, []string{name + ":lease"}, s.token).Err()
	})
}

// Publish stores payload as name's snapshot of version for ttl.
func (s *Store) Publish(ctx context.Context, name string, version int64, payload []byte, ttl time.Duration) error {
	if len(payload) > s.maxPayload {
		return ErrTooLarge
	}
	frame := make([]byte, frameHeader, frameHeader+frameMAC+len(payload))
	frame[0] = frameVersion
	binary.BigEndian.PutUint64(frame[1:9], uint64(version))
	binary.BigEndian.PutUint64(frame[9:17], uint64(time.Now().UnixMilli()))
	frame = append(frame, s.mac(name, frame[:frameHeader], payload)...)
	frame = append(frame, payload...)
	return s.c.DoBulk(ctx, func(ctx context.Context, rdb redis.UniversalClient) error {
		return rdb.Set(ctx, name+":data", frame, ttl).Err()
	})
}

// mac is the frame's HMAC-SHA256 under the secret.
func (s *Store) mac(name string, header, payload []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(name + ":data"))
	m.Write(header)
	m.Write(payload)
	return m.Sum(nil)
}

// Fetch returns name's published payload, its version and when it was
// published. It reads at most the payload bound (GETRANGE): a larger value
// is ErrTooLarge, one that is not a signed frame or whose HMAC does not
// verify ErrUnauthenticated, none ErrNotFound.
func (s *Store) Fetch(ctx context.Context, name string) ([]byte, int64, time.Time, error) {
	var b []byte
	err := s.c.DoBulk(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		b, err = rdb.GetRange(ctx, name+":data", 0, int64(frameHeader+frameMAC+s.maxPayload)).Bytes()
		return err
	})
	switch {
	case err != nil:
		return nil, 0, time.Time{}, err
	case len(b) == 0:
		return nil, 0, time.Time{}, ErrNotFound
	case len(b) > frameHeader+frameMAC+s.maxPayload:
		return nil, 0, time.Time{}, ErrTooLarge
	case len(b) < frameHeader+frameMAC || b[0] != frameVersion || len(s.secret) == 0:
		return nil, 0, time.Time{}, ErrUnauthenticated
	}
	payload := b[frameHeader+frameMAC:]
	if !hmac.Equal(b[frameHeader:frameHeader+frameMAC], s.mac(name, b[:frameHeader], payload)) {
		return nil, 0, time.Time{}, ErrUnauthenticated
	}
	version := int64(binary.BigEndian.Uint64(b[1:9]))
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(b[9:17]))).UTC()
	return payload, version, at, nil
}
