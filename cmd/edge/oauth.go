package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/oauth"
)

// newOAuth turns access tokens on (edge.NewOAuth) when EDGE_OAUTH_ISSUER
// and EDGE_OAUTH_AUDIENCE are set (parseSettings made sure both or neither
// are), and returns nil otherwise.
func newOAuth(ctx context.Context, cfg settings, store *keys.Store, log *slog.Logger) (*edge.OAuth, error) {
	if cfg.OAuthIssuer == "" {
		return nil, nil
	}
	o, err := edge.NewOAuth(ctx, oauth.Config{Issuer: cfg.OAuthIssuer, Audience: cfg.OAuthAudience,
		JWKSHosts: cfg.OAuthJWKSHosts, Logger: log.With("component", "oauth")}, store)
	if err != nil {
		return nil, fmt.Errorf("bad OAuth settings (EDGE_OAUTH_ISSUER, EDGE_OAUTH_AUDIENCE, EDGE_OAUTH_JWKS_HOSTS): %w", err)
	}
	return o, nil
}
