package observability

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
)

// newMeterProvider builds the SDK meter provider: the runtime collectors
// and the Prometheus reader on reg, plus cfg.MetricReader or an OTLP/console reader when the environment
// asks for one.
func newMeterProvider(ctx context.Context, cfg Config, getenv func(string) string, res *resource.Resource, reg *prometheus.Registry) (*sdkmetric.MeterProvider, error) {
	if err := registerRuntime(reg); err != nil {
		return nil, err
	}
	// WithoutScopeInfo: every instrument has a unique name, so the scope
	// labels told nothing, and two of the three were always empty
	// (otel_scope_version, otel_scope_schema_url): docs/contract.md section 18.
	prom, err := promexporter.New(promexporter.WithRegisterer(reg), promexporter.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom)}

	switch {
	case cfg.MetricReader != nil:
		opts = append(opts, sdkmetric.WithReader(cfg.MetricReader))
	default:
		name := exporterName(getenv, "METRICS")
		if name == "none" || name == "prometheus" {
			break
		}
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: %w", name, err)
		}
		if autoexport.IsNoneMetricReader(r) {
			break
		}
		opts = append(opts, sdkmetric.WithReader(r))
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

// promHandler serves the Prometheus text format, or OpenMetrics to a
// scraper that asks for it (Accept: application/openmetrics-text):
// only OpenMetrics carries exemplars, the trace_id of a kept request on
// the request-duration histogram (docs/contract.md section 20).
func promHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}
