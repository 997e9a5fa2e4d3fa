// Package keys is the partner API key store: the key file of operations.md,
// held as SHA-256 digests only, looked up per request, reloaded on demand.
package keys

import (
	"crypto/sha256"
	"time"
)

// Mode is a key's mode: which PMS serves it.
type Mode string

const (
	ModeLive Mode = "live" // svc_live_ keys, served by PMS_BASE_URL
	ModeTest Mode = "test" // svc_test_ keys, served by PMS_SANDBOX_URL only
)

// The scopes of v1 (docs/contract.md sections 3 and 26).
const (
	// ScopePropertiesRead is the scope every v1 route needs.
	ScopePropertiesRead = "properties:read"
	// ScopeWebhooksManage is the scope the webhook endpoints' routes need
	// besides it (`edge keys add --scopes properties:read,webhooks:manage`).
	ScopeWebhooksManage = "webhooks:manage"
)

// Key is one loaded key record. It never holds the key itself. Keys are
// shared between requests and immutable once loaded.
type Key struct {
	// ID is the public id (key_...): what logs, traces and metrics show.
	ID      string
	Partner string
	Brand   string
	Mode    Mode
	// Suspended keys authenticate but are refused (403 API_KEY_SUSPENDED).
	Suspended bool
	// ExpiresAt is zero when the key does not expire.
	ExpiresAt time.Time
	// RateLimit is the key's own quota; nil means the deployment's default.
	RateLimit *RateLimit
	// ClientID is the OAuth 2.0 client whose access tokens act as this
	// record; empty when the record serves its API key only.
	ClientID string

	allProperties bool                // properties: ["*"]
	properties    map[string]struct{} // lower-case ids, when not all
	scopes        map[string]struct{} // nil: scopes absent, meaning all
}

// Expired reports whether the key has passed its expiry at now.
func (k *Key) Expired(now time.Time) bool {
	return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt)
}

// HasScope reports whether the key holds scope; a key whose record has no
// scopes list holds every scope.
func (k *Key) HasScope(scope string) bool {
	if k.scopes == nil {
		return true
	}
	_, ok := k.scopes[scope]
	return ok
}

// AllProperties reports whether the key is granted every property of its brand.
func (k *Key) AllProperties() bool { return k.allProperties }

// CanSee reports whether the key is granted the property with the lower-case id.
func (k *Key) CanSee(id string) bool {
	if k.allProperties {
		return true
	}
	_, ok := k.properties[id]
	return ok
}

// Digest is the SHA-256 of a whole key string: the only form stored.
func Digest(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// Receives reports whether the key receives the feed of property changes
// at now on the edge of brand, as GET /v1/events would serve it: not
// expired, not suspended, of brand, holding properties:read. A webhook
// endpoint of a key that does not receives nothing, and resumes when it
// does again (docs/webhooks.md).
func (k *Key) Receives(brand string, now time.Time) bool {
	return !k.Expired(now) && !k.Suspended && k.Brand == brand && k.HasScope(ScopePropertiesRead)
}
