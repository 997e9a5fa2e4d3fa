package boltwebhooks

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// record is an endpoint as stored: JSON with names of its own (a Go
// field renamed later does not change the file), the format first, and
// the order of creation (seq: the bucket's sequence), by which Endpoints
// and List answer.
type record struct {
	Format         int       `json:"format"`
	Seq            uint64    `json:"seq"`
	ID             string    `json:"id"`
	KeyID          string    `json:"keyId"`
	URL            string    `json:"url"`
	Description    string    `json:"description,omitempty"`
	Secret         string    `json:"secret"`
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

var errBadValue = errors.New("boltwebhooks: a stored endpoint does not decode")

func encode(seq uint64, e *webhooks.Endpoint) ([]byte, error) {
	return json.Marshal(record{Format: format, Seq: seq, ID: e.ID, KeyID: e.KeyID, URL: e.URL,
		Description: e.Description, Secret: e.Secret, CreatedAt: e.CreatedAt,
		Status: string(e.Status), DisabledReason: e.DisabledReason, DisabledAt: e.DisabledAt,
		After: e.After, Failures: e.Failures, NextAttempt: e.NextAttempt})
}

// decode reads what encode wrote: the endpoint and its seq.
func decode(b []byte) (webhooks.Endpoint, uint64, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil || r.Format != format || r.ID == "" {
		return webhooks.Endpoint{}, 0, errBadValue
	}
	return webhooks.Endpoint{ID: r.ID, KeyID: r.KeyID, URL: r.URL, Description: r.Description,
		Secret: r.Secret, CreatedAt: r.CreatedAt, Status: webhooks.Status(r.Status),
		DisabledReason: r.DisabledReason, DisabledAt: r.DisabledAt,
		Progress: webhooks.Progress{After: r.After, Failures: r.Failures, NextAttempt: r.NextAttempt}}, r.Seq, nil
}
