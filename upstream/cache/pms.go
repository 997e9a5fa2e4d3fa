package cache

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// PMSConfig is one mode's read model over a PMS (docs/resilience.md): the
// client (retries, breaker), the mapping and the cache, each reporting to
// Telemetry under the pms label Mode.
type PMSConfig struct {
	Mode string // "live", "test": the metrics' pms label and the logs'
	// Client is the PMS client's; its Tracer, Metrics, WrapTransport and
	// Logger are set here from Telemetry and Log.
	Client pms.ClientConfig
	// Direct is the mapping's; its OnReject is set here (counted and
	// logged: rejectLog).
	Direct pms.DirectOptions
	// Cache is the cache's; its Logger and Metrics are set here.
	Cache     Config
	Telemetry *observability.Telemetry // required
	Log       *slog.Logger             // required
	// WrapLoad, when set, makes the cache's load from the direct catalog
	// (a fleet's shared load, a shadow's comparison after each load); nil:
	// the cache's own load, the direct snapshot.
	WrapLoad func(d *pms.Direct) Loader
}

// NewPMS builds cfg's read model; the caller closes it.
func NewPMS(cfg PMSConfig) (*Cache, error) {
	log, meter := cfg.Log.With("pms", cfg.Mode), cfg.Telemetry.Meter()
	pm, err := upstream.NewPMSMetrics(meter, cfg.Mode)
	if err != nil {
		return nil, fmt.Errorf("PMS metrics: %w", err)
	}
	cm, err := NewMetrics(meter, cfg.Mode)
	if err != nil {
		return nil, fmt.Errorf("cache metrics: %w", err)
	}
	cm.SetTTL(cfg.Cache.TTL)
	rejections, err := upstream.NewRejectionMetrics(meter)
	if err != nil {
		return nil, fmt.Errorf("mapping rejection metrics: %w", err)
	}
	cc := cfg.Client
	cc.Tracer, cc.Metrics, cc.Logger = cfg.Telemetry.Tracer(), pm, log
	cc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return cfg.Telemetry.Transport(rt, pms.ResendCount)
	}
	client, err := pms.NewClient(cc)
	if err != nil {
		return nil, fmt.Errorf("PMS client (%s): %w", cfg.Mode, err)
	}
	do := cfg.Direct
	// A rejection is an event on the span of the walk (or get) that read
	// the record, and its log lines carry that trace's id: each at DEBUG,
	// at WARN only the few a brand-sized walk can afford (rejectLog).
	rl := &rejectLog{log: log}
	do.OnReject = func(ctx context.Context, r *mapping.Rejection) {
		rejections.Rejected(ctx, r.HotelID, r.Reason)
		rl.rejected(ctx, r)
	}
	direct := pms.NewDirect(client, do)
	c := cfg.Cache
	c.Logger, c.Metrics, c.Tracer, c.LinkRequest = log, cm, cfg.Telemetry.Tracer(), cfg.Telemetry.LinkRequest
	c.KeepWalk, c.KeepRequest, c.LeadLoad = cfg.Telemetry.KeepWalk, cfg.Telemetry.KeepRequest, cfg.Telemetry.LeadLoad
	if cfg.WrapLoad != nil {
		c.Load = cfg.WrapLoad(direct)
	}
	return New(direct, c), nil
}
