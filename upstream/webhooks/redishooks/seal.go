package redishooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// An endpoint's secret signs what partners receive: whoever reads it can
// forge deliveries to them. Redis is read by more than the edge (its
// operators, a backup, a monitoring user), so the secret is kept sealed
// there: AES-256-GCM under a key derived from EDGE_FLEET_SECRET, the hash
// key's name and the endpoint's id as additional data (a sealed secret
// moved to another endpoint does not open). The nonce is derived from
// those and the secret itself (synthetic, as in AES-GCM-SIV), so that the
// same secret seals to the same bytes at every write of its endpoint's
// progress: a random nonce drawn at each of billions of writes would
// approach GCM's bound on one key.

// sealer seals and opens endpoints' secrets.
type sealer struct {
	aead     cipher.AEAD
	nonceKey []byte
}

func newSealer(fleetSecret []byte) (sealer, error) {
	derive := func(label string) []byte {
		m := hmac.New(sha256.New, fleetSecret)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	block, err := aes.NewCipher(derive("partner-edge webhooks: the key sealing endpoints' secrets"))
	if err != nil {
		return sealer{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return sealer{}, err
	}
	return sealer{aead: aead, nonceKey: derive("partner-edge webhooks: the key of the sealing's nonces")}, nil
}

// data is what binds a sealed secret to its place: the hash key and the
// endpoint's id.
func data(hash, id string) []byte { return append(append([]byte(hash), 0), id...) }

// seal is secret sealed for endpoint id of hash, in base64.
func (s sealer) seal(hash, id, secret string) string {
	m := hmac.New(sha256.New, s.nonceKey)
	m.Write(data(hash, id))
	m.Write([]byte{0})
	m.Write([]byte(secret))
	nonce := m.Sum(nil)[:s.aead.NonceSize()]
	return base64.StdEncoding.EncodeToString(s.aead.Seal(nonce, nonce, []byte(secret), data(hash, id)))
}

var errSealed = errors.New("redishooks: a sealed secret does not open")

// open is what seal sealed.
func (s sealer) open(hash, id, sealed string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	n := s.aead.NonceSize()
	if err != nil || len(b) < n {
		return "", errSealed
	}
	secret, err := s.aead.Open(nil, b[:n], b[n:], data(hash, id))
	if err != nil {
		return "", errSealed
	}
	return string(secret), nil
}
