package oauth_test

import (
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

const testAudience = "https://api.aurora.example.com/v1"

// newClock is the oauth tests' clock, at a fixed instant.
func newClock() *testkit.Clock {
	return testkit.NewClockAt(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
}

// claims are valid access-token claims at now for client.
func claims(iss string, now time.Time, client string) map[string]any {
	return map[string]any{
		"iss": iss, "aud": testAudience, "sub": client, "client_id": client,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": "j1", "scope": "properties:read",
	}
}
