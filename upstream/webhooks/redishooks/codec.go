package redishooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// ErrForged is a stored endpoint that does not verify: not signed with
// EDGE_FLEET_SECRET (written by someone without it, or by a member with
// another), signed for another endpoint or another brand's keys,
// damaged, or whose sealed secret does not open (seal.go). It is never used nor written over; the caller logs it.
// Deleting the endpoint (the API's DELETE, or HDEL) removes it.
var ErrForged = errors.New("redishooks: a stored webhook endpoint does not verify (EDGE_FLEET_SECRET)")

// An endpoint is one field of the hash (keyed by its id) whose value is
// the signature, 32 hex digits, then the record's JSON. The signature is
// the state's of the events feed (redisevents): HMAC-SHA256 under the
// fleet's secret of the hash key's name, the field and the JSON, each
// after a zero byte, truncated to 16 bytes. The key's name and the field
// are in it, so a value cannot be moved to another endpoint or brand.
const macLen = 32

// record is an endpoint as stored: JSON with names of its own, the
// format first, and the order of creation (seq: the counter key's value
// when it was created), by which Endpoints and List answer.
type record struct {
	Format         int       `json:"format"`
	Seq            int64     `json:"seq"`
	ID             string    `json:"id"`
	KeyID          string    `json:"keyId"`
	URL            string    `json:"url"`
	Description    string    `json:"description,omitempty"`
	Secret         string    `json:"secretSealed"` // sealed: seal.go
	CreatedAt      time.Time `json:"createdAt"`
	Status         string    `json:"status"`
	DisabledReason string    `json:"disabledReason,omitempty"`
	DisabledAt     time.Time `json:"disabledAt,omitzero"`
	After          string    `json:"after"`
	Failures       int       `json:"failures,omitempty"`
	NextAttempt    time.Time `json:"nextAttempt,omitzero"`
}

// format is record's version.
const format = 1

func (s *Store) mac(id string, body []byte) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(s.hash))
	for _, f := range [][]byte{[]byte(id), body} {
		m.Write([]byte{0})
		m.Write(f)
	}
	return hex.EncodeToString(m.Sum(nil)[:macLen/2])
}

// encode is the signed value of e, created seq-th.
func (s *Store) encode(seq int64, e *webhooks.Endpoint) (string, error) {
	body, err := json.Marshal(record{Format: format, Seq: seq, ID: e.ID, KeyID: e.KeyID, URL: e.URL,
		Description: e.Description, Secret: s.seal.seal(s.hash, e.ID, e.Secret), CreatedAt: e.CreatedAt,
		Status: string(e.Status), DisabledReason: e.DisabledReason, DisabledAt: e.DisabledAt,
		After: e.After, Failures: e.Failures, NextAttempt: e.NextAttempt})
	if err != nil {
		return "", err
	}
	return s.mac(e.ID, body) + string(body), nil
}

// decode reads the value of field id as encode wrote it; anything else
// is ErrForged.
func (s *Store) decode(id, v string) (webhooks.Endpoint, int64, error) {
	forged := fmt.Errorf("%w: endpoint %s", ErrForged, redisconn.KeyPart(id))
	if len(v) < macLen || !hmac.Equal([]byte(v[:macLen]), []byte(s.mac(id, []byte(v[macLen:])))) {
		return webhooks.Endpoint{}, 0, forged
	}
	var r record
	if err := json.Unmarshal([]byte(v[macLen:]), &r); err != nil || r.Format != format || r.ID != id {
		return webhooks.Endpoint{}, 0, forged
	}
	secret, err := s.seal.open(s.hash, id, r.Secret)
	if err != nil {
		return webhooks.Endpoint{}, 0, forged
	}
	return webhooks.Endpoint{ID: r.ID, KeyID: r.KeyID, URL: r.URL, Description: r.Description,
		Secret: secret, CreatedAt: r.CreatedAt, Status: webhooks.Status(r.Status),
		DisabledReason: r.DisabledReason, DisabledAt: r.DisabledAt,
		Progress: webhooks.Progress{After: r.After, Failures: r.Failures, NextAttempt: r.NextAttempt}}, r.Seq, nil
}
