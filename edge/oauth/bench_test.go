package oauth_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
)

// BenchmarkVerify: the cost of one token check per algorithm (cached keys),
// and of refusing a 1 MB token (length only, no decoding).
func BenchmarkVerify(b *testing.B) {
	s := newSetup(b)
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA} {
		tok := s.signers[alg].Sign(b, claims(s.is.URL(), s.clk.Now(), "c"), "at+jwt")
		b.Run(string(alg), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.v.Verify(context.Background(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	huge := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("A", 1<<20) + ".sig"
	b.Run("1MB refused", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.v.Verify(context.Background(), huge); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}
