package keys

import (
	"crypto/sha256"
	"strings"
)

// Key prefixes. The prefix tells the key's mode; a key's record must agree.
const (
	PrefixLive = "svc_live_"
	PrefixTest = "svc_test_"
)

// minSecretLen is the least number of [A-Za-z0-9] characters after the
// prefix (docs/contract.md section 3).
const minSecretLen = 24

// MaxTokenLen caps a key's total length. The contract sets no maximum,
// but every lookup hashes the whole token: the cap bounds the hashing
// work a caller can cause per request, whatever header sizes the server
// allows. Minted keys are 41 characters; 256 leaves ample room for keys
// issued by other tools.
const MaxTokenLen = 256

// ValidFormat reports whether token has the shape of a key: svc_live_ or
// svc_test_ followed by at least 24 characters of [A-Za-z0-9], at most
// MaxTokenLen characters in all. It says nothing about whether the key exists.
func ValidFormat(token string) bool {
	_, ok := modeOf(token)
	return ok
}

// HasKeyPrefix reports whether token starts like an API key (svc_live_ or
// svc_test_), well-formed or not: such a credential is always taken as an
// API key, never as an access token (docs/contract.md section 12).
func HasKeyPrefix(token string) bool {
	return strings.HasPrefix(token, PrefixLive) || strings.HasPrefix(token, PrefixTest)
}

// modeOf returns the mode a well-formed token's prefix names; false when the
// token is not of the key format.
func modeOf(token string) (Mode, bool) {
	mode := ModeLive
	rest, ok := strings.CutPrefix(token, PrefixLive)
	if !ok {
		mode = ModeTest
		rest, ok = strings.CutPrefix(token, PrefixTest)
	}
	if !ok || len(token) > MaxTokenLen || len(rest) < minSecretLen {
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		if !isAlnum(rest[i]) {
			return "", false
		}
	}
	return mode, true
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// digestBounded is Digest for a token of at most MaxTokenLen bytes, copied
// into a stack buffer so that the per-request path allocates nothing.
func digestBounded(token string) [sha256.Size]byte {
	var buf [MaxTokenLen]byte
	return sha256.Sum256(append(buf[:0], token...))
}
