package main

import (
	"fmt"
	"log/slog"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// newShadow builds the shadow candidate of PMS_CANDIDATE_URL (docs/contract.md
// sections 14 and 17); nil when it is empty. It has a client of its own
// (breaker, retries, connections, metrics labelled pms=candidate) with the
// edge's PMS deadlines. The sandbox is not shadowed: the candidate stands
// for the live PMS, and sandbox data differs by design.
func newShadow(cfg settings, version string, log *slog.Logger, tel *observability.Telemetry) (*shadow.Shadow, error) {
	if cfg.CandidateURL == "" {
		return nil, nil
	}
	log = log.With("pms", "candidate")
	pm, err := upstream.NewPMSMetrics(tel.Meter(), "candidate")
	if err != nil {
		return nil, fmt.Errorf("candidate PMS metrics: %w", err)
	}
	sh, err := shadow.New(shadow.Config{
		Candidate: pms.ClientConfig{
			BaseURL:        cfg.CandidateURL,
			Token:          cfg.CandidateToken,
			Version:        version,
			CallTimeout:    cfg.PMSTimeout,
			WalkTimeout:    cfg.PMSWalkTimeout,
			AttemptTimeout: cfg.PMSAttempt,
			MaxWalkBytes:   cfg.CandidateMaxWalkBytes,
			Metrics:        pm,
			Logger:         log,
		},
		Brand:      cfg.Brand,
		CodeSource: cfg.CodeSource,
		Interval:   cfg.CacheTTL,
		Timeout:    cfg.PMSWalkTimeout,
		Logger:     log,
		Meter:      tel.MeterProvider().Meter(observability.ScopeName),
	})
	if err != nil {
		return nil, err
	}
	log.Info("shadow candidate on: compared with the live PMS in the background, never served",
		"interval", max(cfg.CacheTTL, 0), "max_walk_bytes", cfg.CandidateMaxWalkBytes)
	return sh, nil
}
