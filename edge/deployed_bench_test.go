package edge_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// newDeployedEnv is the bench environment with the edge as cmd/edge
// deploys it by default, as far as a process of its own allows: the access
// log on (JSON, info, through a LogBuffer, into io.Discard), telemetry on
// (sampler parentbased_traceidratio at ratio, the manifest's 0.01;
// tail decisions with EDGE_TRACE_SLOW 1s and EDGE_TRACE_KEEP_RATE 100;
// spans exported to nothing), EDGE_MAX_CONCURRENT 1024 and
// EDGE_AUTH_FAIL_LIMIT 20.
func newDeployedEnv(tb testing.TB, ratio string) *benchEnv {
	tb.Helper()
	env := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": ratio}
	tel, err := observability.New(context.Background(), observability.Config{
		SpanExporter: discardExporter{}, Getenv: func(k string) string { return env[k] },
		TailSampling: true, KeepSlowerThan: time.Second, KeepRate: 100})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	buf := observability.NewLogBuffer(io.Discard, observability.LogBufferConfig{})
	tb.Cleanup(func() { _ = buf.Close(context.Background()) })
	access := observability.NewLogger(buf, "json", slog.LevelInfo, "pms-token-secret")
	e := &benchEnv{sim: pmsim.New(benchSimConfig)}
	pms := httptest.NewServer(e.sim)
	tb.Cleanup(pms.Close)
	return e.startWith(tb, pms.URL, time.Hour, edge.Config{Telemetry: tel, AccessLog: access,
		MaxConcurrent: 1024, AuthFailLimit: 20, Now: e.now})
}

// deployedTargets are the cached rows: a get, a list page of 50 (with its
// events cursor) and an events page of 50 after cursor.
func deployedTargets(env *benchEnv, cursor string) []struct{ name, target string } {
	return []struct{ name, target string }{
		{"get", "/v1/properties/" + env.activeIDs[len(env.activeIDs)/2]},
		{"list", listTarget},
		{"events", eventsTarget(cursor)},
	}
}

// BenchmarkDeployed is the cached get, list page and events page as
// deployed (newDeployedEnv), in process.
func BenchmarkDeployed(b *testing.B) {
	env := newDeployedEnv(b, "0.01")
	for _, c := range deployedTargets(env, env.eventsAfter(b)) {
		b.Run(c.name, func(b *testing.B) {
			r := env.request(c.target, env.liveToken)
			warm(b, env.handler, r, http.StatusOK)
			serveLoop(b, env.handler, r, http.StatusOK)
		})
	}
}

// BenchmarkDeployedHTTP is BenchmarkDeployed's get and list over loopback
// (httpLoop): cpu-ns/op counts net/http and the client too, as a server's
// CPU per request does under wrk (bench/run), without another process.
func BenchmarkDeployedHTTP(b *testing.B) {
	env := newDeployedEnv(b, "0.01")
	for _, c := range deployedTargets(env, env.eventsAfter(b))[:2] {
		b.Run(c.name, func(b *testing.B) {
			warm(b, env.handler, env.request(c.target, env.liveToken), http.StatusOK)
			httpLoop(b, env.handler, c.target, env.liveToken)
		})
	}
}
