package redisconn

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxKeyPart is the longest part kept verbatim in a key name.
const maxKeyPart = 64

// KeyPart returns s when it is short and made of [A-Za-z0-9._-] only,
// otherwise "h" and the first 32 hex digits of its SHA-256: a key name
// never carries arbitrary or unbounded bytes.
func KeyPart(s string) string {
	if s != "" && len(s) <= maxKeyPart && !strings.ContainsFunc(s, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-')
	}) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:16])
}
