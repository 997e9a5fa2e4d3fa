package redisconn

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/upstream"
)

// otelHook gives every Redis command a client span and a
// db.client.operation.duration observation with the OTel database
// semantic conventions (docs/scaling.md, Telemetry; redis.Nil is no failure).
type otelHook struct {
	tracer  trace.Tracer
	metrics *Metrics
	base    []attribute.KeyValue
	names   sync.Map // lower-case command name -> upper-case, bounded by our own commands
	// node (primary and Sentinel forms) gets the address of each new
	// connection: the Sentinel form resolves the primary inside its
	// dialer, so the connection's remote address is the one place it shows.
	node *atomic.Pointer[string]
}

func (h *otelHook) DialHook(next redis.DialHook) redis.DialHook {
	if h.node == nil {
		return next
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil && conn.RemoteAddr() != nil {
			a := conn.RemoteAddr().String()
			h.node.Store(&a)
		}
		return conn, err
	}
}

func (h *otelHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		op := h.opName(cmd.Name())
		start := time.Now()
		var span trace.Span
		if ctx.Value(noSpanKey{}) == nil { // Watch's probes: metrics only
			ctx, span = h.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(h.base...), trace.WithAttributes(semconv.DBOperationName(op)))
		}
		err := next(ctx, cmd)
		errType := errorType(err)
		if span != nil {
			if errType != "" {
				span.SetAttributes(semconv.ErrorTypeKey.String(errType))
				span.SetStatus(codes.Error, errType)
			}
			span.End()
		}
		h.metrics.Command(ctx, op, errType, time.Since(start))
		return err
	}
}

// noSpanKey marks a context whose commands get no span (Watch's probes).
type noSpanKey struct{}

func (h *otelHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next // pipelines (redislimit's refill) get no spans or metrics
}

func (h *otelHook) opName(name string) string {
	if v, ok := h.names.Load(name); ok {
		return v.(string)
	}
	up := strings.ToUpper(name)
	h.names.Store(name, up)
	return up
}

// errorType is a low-cardinality error.type for a command's error: "" for
// none (redis.Nil included), "timeout", "connection", or the first word of
// a Redis error reply ("ERR", "NOSCRIPT", "READONLY"...), at most 16 bytes.
func errorType(err error) string {
	if err == nil || errors.Is(err, redis.Nil) {
		return ""
	}
	var re redis.Error
	if errors.As(err, &re) {
		w, _, _ := strings.Cut(re.Error(), " ")
		if len(w) > 16 || w == "" {
			return "reply"
		}
		return w
	}
	// Otherwise the connection failed, timed out or was cancelled: the
	// one classifier of failed calls (upstream.Classify) tells which.
	switch upstream.Classify(context.Background(), err, upstream.BadGateway).Kind {
	case upstream.Timeout:
		return "timeout"
	case upstream.Canceled:
		return "canceled"
	}
	return "connection"
}
