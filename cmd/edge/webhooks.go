package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/boltwebhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/feedsource"
	"github.com/partner-edge/partner-edge/upstream/webhooks/redishooks"
)

// hooks is the delivery of the feeds to partners' endpoints
// (docs/webhooks.md) in this process: nil when webhooks are off.
type hooks struct {
	// Registry holds the endpoints and their progress: what the routes
	// under /v1/webhook-endpoints create, list, delete and enable.
	Registry webhooks.Registry
	// Source reads each endpoint's events; Position is where an endpoint
	// created now starts.
	Source *feedsource.Source
	// Deliverer delivers them; Wake after an endpoint was created or
	// enabled, and after a walk added events (the feeds' Appended).
	Deliverer *webhooks.Deliverer
	// AllowHTTP: endpoints may have http:// URLs (EDGE_WEBHOOK_ALLOW_HTTP,
	// the demo); the routes take them then, else https only.
	AllowHTTP bool
	sender    *webhooks.HTTPSender
}

// wake has the deliverer look at the feeds now (events.Config.Appended);
// nothing when webhooks are off.
func (h *hooks) wake() {
	if h != nil {
		h.Deliverer.Wake()
	}
}

// webhookStore is where endpoints and their progress live
// (docs/webhooks.md, "Where endpoints and progress live"), or why
// webhooks are off (the start-up log says it). This is the one place a
// store is chosen: a fleet's in its Redis, signed with EDGE_FLEET_SECRET,
// with a Lease per endpoint so that one member delivers each; a single
// edge's in EDGE_DATA_DIR beside its feed (its own file); the demo's in
// memory (it ends with the demo).
func (p *process) webhookStore() (reg webhooks.Registry, lease webhooks.Lease, off string, err error) {
	switch {
	case p.fm != nil:
		st, err := redishooks.New(redishooks.Config{Client: p.fm.client, Secret: p.cfg.FleetSecret, Brand: p.cfg.Brand})
		if err != nil {
			return nil, nil, "", err
		}
		l, err := redishooks.NewLease(redishooks.LeaseConfig{Client: p.fm.client, Brand: p.cfg.Brand})
		if err != nil {
			return nil, nil, "", err
		}
		p.log.Info("webhook endpoints kept in Redis, the fleet's: each delivered by one member at a time under a lease")
		return st, l, "", nil
	case p.data != nil:
		st, err := boltwebhooks.Open(p.cfg.DataDir)
		if err != nil {
			return nil, nil, "", fmt.Errorf("EDGE_DATA_DIR: %w", err)
		}
		p.onStop(func() {
			if err := st.Close(); err != nil {
				p.log.Warn("EDGE_DATA_DIR: closing the webhooks file failed", "error", err)
			}
		})
		p.log.Info("webhook endpoints kept in EDGE_DATA_DIR: endpoints and their progress outlive a restart")
		return st, nil, "", nil
	case p.demo != nil:
		p.log.Info("webhook endpoints of the demo kept in memory: they end with it")
		return &webhooks.Memory{}, nil, "", nil
	}
	return nil, nil, "webhooks off: endpoints need EDGE_DATA_DIR (a single edge) or a fleet's Redis to live in; webhook routes answer 503", nil
}

// startWebhooks builds the deliverer, before the feeds that wake it
// (startCatalogs): its client refuses every inside address but
// EDGE_WEBHOOK_ALLOW_CIDRS (the demo: loopback, and http). It runs once
// the feeds exist (runWebhooks).
func (p *process) startWebhooks(context.Context) error {
	reg, lease, off, err := p.webhookStore()
	if err != nil {
		return err
	}
	if reg == nil {
		p.log.Info(off)
		return nil
	}
	allow, allowHTTP := p.cfg.WebhookAllow, p.cfg.WebhookAllowHTTP
	if p.demo != nil { // a receiver on this machine: edge webhooks receive
		allow, allowHTTP = append(allow, netip.MustParsePrefix("127.0.0.0/8")), true
		p.demo.webhooks = true
	}
	sender := &webhooks.HTTPSender{
		Client:    webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow, AllowHTTP: allowHTTP}}),
		AllowHTTP: allowHTTP,
		Tracer:    p.tel.TracerProvider(),
		UserAgent: "partner-edge-webhooks/" + p.version,
	}
	src := &feedsource.Source{Keys: p.webhookKeys(time.Now)}
	d, err := webhooks.New(webhooks.Config{Store: reg, Source: src, Sender: sender, Lease: lease,
		Log: p.log.With("component", "webhooks"), Meter: p.tel.Meter()})
	if err != nil {
		return err
	}
	p.hooks = &hooks{Registry: reg, Source: src, Deliverer: d, AllowHTTP: allowHTTP, sender: sender}
	p.log.Info("webhooks on", "allow_cidrs", allow, "allow_http", allowHTTP)
	return nil
}

// runWebhooks runs the deliverer until the edge stops: its goroutines
// end, and its connections close, before the feeds and the stores they
// read close (stops run in reverse).
func (p *process) runWebhooks(ctx context.Context) error {
	h := p.hooks
	if h == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.Deliverer.Run(ctx) }()
	p.onStop(func() { cancel(); <-done; h.sender.Close() })
	return nil
}

// webhookKeys answers what an endpoint's key receives now: the key
// holding it (a rotated key's successor) while it receives the feed
// (keys.Key.Receives), its mode's feed, and its grants as the viewer.
func (p *process) webhookKeys(now func() time.Time) feedsource.Keys {
	return func(id string) (feedsource.Access, bool) {
		k, ok := p.store.Holder(id)
		if !ok || !k.Receives(p.cfg.Brand, now()) {
			return feedsource.Access{}, false
		}
		f := p.feeds.Live
		if k.Mode == keys.ModeTest {
			f = p.feeds.Sandbox
		}
		if f == nil {
			return feedsource.Access{}, false
		}
		return feedsource.Access{Key: k.ID, Feed: f, Viewer: k}, true
	}
}
