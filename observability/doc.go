// Package observability sets up what an SRE needs to follow a request: OpenTelemetry
// tracing and metrics configured the way the ecosystem expects (the standard OTEL_*
// variables), a Prometheus /metrics handler and pprof for the admin listener, and
// log/slog loggers that carry trace ids and never print secrets.
//
// The package sets no globals: New returns a *Telemetry whose providers and
// propagator the caller passes to whatever it instruments (otel.SetTracerProvider,
// if wanted, is the program's choice in run). Likewise RouteStdLog points
// Go's standard logger into a logger only when a program calls it.
//
// Wiring, in short:
//
//	tel, err := observability.New(ctx, observability.Config{Getenv: getenv})
//	defer tel.Shutdown(shutdownCtx)                  // flushes spans and metrics
//	m := tel.Metrics()                               // instruments, created once
//	handler := tel.Middleware()(router)              // server span per request
//	rt := tel.Transport(base, upstream/pms.ResendCount)  // client span per attempt
//	admin := observability.AdminHandler(tel.MetricsHandler(), redactedArgs)
//	log := observability.NewLogger(stderr, "json", slog.LevelInfo, pmsToken)
package observability
