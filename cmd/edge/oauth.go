package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/oauth"
)

// newOAuth turns access tokens on when EDGE_OAUTH_ISSUER and
// EDGE_OAUTH_AUDIENCE are set (parseSettings made sure both or neither
// are), and returns nil otherwise. The issuer's keys are fetched now, waiting
// at most 1 s (then in the background, until ctx ends); an issuer that cannot
// be reached does not stop the edge (API keys serve; tokens get 503 with
// Retry-After until a fetch succeeds, at most one per 30 s).
func newOAuth(ctx context.Context, cfg settings, store *keys.Store, log *slog.Logger) (*edge.OAuth, error) {
	if cfg.OAuthIssuer == "" {
		return nil, nil
	}
	v, err := oauth.New(ctx, oauth.Config{
		Issuer:    cfg.OAuthIssuer,
		Audience:  cfg.OAuthAudience,
		JWKSHosts: cfg.OAuthJWKSHosts,
		Logger:    log.With("component", "oauth"),
	})
	if err != nil {
		return nil, fmt.Errorf("bad OAuth settings (EDGE_OAUTH_ISSUER, EDGE_OAUTH_AUDIENCE, EDGE_OAUTH_JWKS_HOSTS): %w", err)
	}
	if !v.Ready() {
		log.Warn("oauth: no signing keys yet; access tokens get 503 until the issuer answers",
			"issuer", cfg.OAuthIssuer)
	}
	return &edge.OAuth{Issuer: cfg.OAuthIssuer, Audience: cfg.OAuthAudience, Verifier: v, Clients: store}, nil
}
