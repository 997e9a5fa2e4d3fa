package listener

import "time"

// WithTLSTestHooks returns cfg with the certificate watch settling in
// settle and onLoad called after every load attempt of the certificate
// files, so that a test waits on the reload, not on the settle timer.
func WithTLSTestHooks(cfg ServeConfig, settle time.Duration, onLoad func()) ServeConfig {
	cfg.tlsSettle, cfg.onTLSLoad = settle, onLoad
	return cfg
}

// WithHeadSlots returns cfg with *held set, before Serve listens, to a
// count of the head gate's slots held.
func WithHeadSlots(cfg ServeConfig, held *func() int) ServeConfig {
	cfg.headSlots = func(f func() int) { *held = f }
	return cfg
}
