package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Announce asks Redis once (waiting at most 1 s) and logs what the answer
// means for the fleet: reachable (limits and snapshot loads shared), its
// TLS certificate not trusted, or unreachable; the last two are warnings,
// never errors: the edge runs in-process until Redis answers. where names
// Redis in the log (Settings.Describe).
func (c *Client) Announce(ctx context.Context, where string, log *slog.Logger) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	switch err := c.Ping(pctx); {
	case err == nil:
		c.joinedNow(pctx, where) // redis answers: joined the fleet
	case IsTLSTrust(err):
		log.Warn("redis TLS certificate not trusted (check EDGE_REDIS_CA_FILE); limits and snapshot loads are in-process until it is",
			"redis", where, "error", err)
	default: // a wrong password shows as WRONGPASS: Redis's reply never holds the password
		log.Warn("redis unreachable at start; limits and snapshot loads are in-process until it answers",
			"redis", where, "error", err)
	}
}

// SetLibraryLogger sends go-redis's own log lines to log at debug level.
// It sets go-redis's logger, a process-wide setting of the library
// (redis.SetLogger): without it go-redis prints "connection pool: failed
// to dial" lines on stderr while Redis is down. Breaker transitions are
// what operators see (Guard logs them once).
func SetLibraryLogger(log *slog.Logger) { redis.SetLogger(libraryLog{log}) }

// libraryLog sends go-redis's internal log lines to slog at debug level.
type libraryLog struct{ log *slog.Logger }

func (g libraryLog) Printf(ctx context.Context, format string, v ...any) {
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}
