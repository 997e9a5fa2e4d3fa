package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The headers of a delivery, as Standard Webhooks v1 names them
// (docs/webhooks.md, "Signing").
const (
	HeaderID        = standardwebhooks.HeaderWebhookID        // the event id, the same on every attempt
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp // this attempt, Unix seconds
	HeaderSignature = standardwebhooks.HeaderWebhookSignature // "v1," and the base64 HMAC-SHA256 of id.timestamp.body
)

// SecretPrefix opens every endpoint secret; the rest is the standard
// base64 of SecretBytes random bytes, which are the HMAC key.
const (
	SecretPrefix = "whsec_"
	SecretBytes  = 24
)

// ErrSecret is a secret that is not SecretPrefix and the base64 of
// SecretBytes bytes.
var ErrSecret = errors.New("webhooks: not an endpoint secret")

// NewSecret is a new endpoint secret: SecretPrefix and the base64 of
// SecretBytes bytes from crypto/rand (which never fails).
func NewSecret() string {
	var key [SecretBytes]byte
	_, _ = rand.Read(key[:])
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:])
}

// CheckSecret reports ErrSecret for a string NewSecret would not make: a
// stored secret is checked when read, so a damaged one fails its endpoint's
// attempts as such rather than signing with another key.
func CheckSecret(secret string) error {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok || base64.StdEncoding.DecodedLen(len(rest)) < SecretBytes {
		return ErrSecret
	}
	if key, err := base64.StdEncoding.DecodeString(rest); err != nil || len(key) != SecretBytes {
		return ErrSecret
	}
	return nil
}

// Sign sets the Standard Webhooks headers of one attempt at delivering body
// (the event's JSON, exactly as sent) as event id at the attempt's time at.
// The signature is made by the specification's reference library, so that
// what partners verify with it is what it computes; only the secret's form
// is ours to check.
func Sign(h http.Header, secret, id string, at time.Time, body []byte) error {
	if err := CheckSecret(secret); err != nil {
		return err
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return ErrSecret
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}
