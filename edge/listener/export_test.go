package listener

import "time"

// WithTLSTestHooks returns cfg with the certificate watch settling in
// settle and onLoad called after every load attempt of the certificate
// files, so that a test waits on the reload, not on the settle timer.
func WithTLSTestHooks(cfg ServeConfig, settle time.Duration, onLoad func()) ServeConfig {
	cfg.tlsSettle, cfg.onTLSLoad = settle, onLoad
	return cfg
}
