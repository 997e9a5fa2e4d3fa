package redislimit

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
)

// takeScript takes up to ARGV[3] units from the GCRA bucket KEYS[1] (its
// theoretical arrival time, TAT, in microseconds) of burst ARGV[1] refilled
// one unit every ARGV[2] microseconds, at time ARGV[4] (microseconds; empty:
// Redis's own clock, TIME). It grants what the bucket holds, up to the ask
// (redis_rate's AllowAtMost, with the clock as an argument), and returns
// {granted, units left after, microseconds until full}. An ask of 0 only
// looks. The key expires when the bucket is full again: an absent bucket is
// full. One key per call, so the script runs in a Redis Cluster as is.
var takeScript = redis.NewScript(`
local burst = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local tat = tonumber(redis.call("GET", KEYS[1])) or now
if tat < now then tat = now end
local avail = math.floor((now - tat) / interval + burst + 1e-6)
if avail < 0 then avail = 0 end
local got = want
if got > avail then got = avail end
if got > 0 then
  tat = tat + got * interval
  redis.call("SET", KEYS[1], string.format("%.3f", tat), "PX", math.max(1, math.ceil((tat - now) / 1000)))
end
return {got, avail - got, math.ceil(tat - now)}
`)

// reply is the bucket as one call of takeScript left it.
type reply struct {
	ok    bool          // the call answered (a pipeline's replies may fail one by one)
	got   int           // units granted
	left  int           // whole units the bucket holds after the call
	reset time.Duration // until it is full again
}

// ask is one call of takeScript: the bucket, its limit, the units wanted.
type ask struct {
	name string
	lim  ratelimit.Limit
	want int
}

// args are takeScript's ARGV for a; now zero: Redis's clock.
func (a ask) args(now time.Time) []any {
	at := ""
	if !now.IsZero() {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	return []any{a.lim.Burst, strconv.FormatFloat(1e6/a.lim.PerSecond, 'g', -1, 64), a.want, at}
}

// errReply is a script reply of an unexpected shape.
var errReply = errors.New("redislimit: unexpected reply from the rate-limit script")

func parseReply(c *redis.Cmd) (reply, error) {
	v, err := c.Result()
	if err != nil {
		return reply{}, err
	}
	vals, ok := v.([]any)
	if !ok || len(vals) != 3 {
		return reply{}, errReply
	}
	var n [3]int64
	for i, x := range vals {
		if n[i], ok = x.(int64); !ok || n[i] < 0 {
			return reply{}, errReply
		}
	}
	if n[2] > math.MaxInt64/int64(time.Microsecond) {
		return reply{}, errReply
	}
	return reply{ok: true, got: int(n[0]), left: int(n[1]), reset: time.Duration(n[2]) * time.Microsecond}, nil
}

// run calls takeScript once per ask, in one pipeline (one round trip), and
// returns the replies in order; an error for the whole round trip, or for
// one reply (that ask's reply is then the zero reply, not ok).
// A Redis that lost its scripts (a restart, a failover) gets the script
// loaded and the pipeline sent again, once.
func run(ctx context.Context, rdb redis.Cmdable, asks []ask, now time.Time) ([]reply, error) {
	if len(asks) == 1 { // the request path: EVALSHA, EVAL when the script is missing
		r, err := parseReply(takeScript.Run(ctx, rdb, []string{asks[0].name}, asks[0].args(now)...))
		return []reply{r}, err
	}
	for attempt := 0; ; attempt++ {
		cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, a := range asks {
				takeScript.EvalSha(ctx, p, []string{a.name}, a.args(now)...)
			}
			return nil
		})
		if err != nil && attempt == 0 && slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return redis.HasErrorPrefix(c.Err(), "NOSCRIPT") }) {
			if err := takeScript.Load(ctx, rdb).Err(); err != nil {
				return nil, err
			}
			continue
		}
		replies := make([]reply, len(asks))
		for i, c := range cmds {
			replies[i], _ = parseReply(c.(*redis.Cmd))
		}
		if err != nil && !slices.ContainsFunc(replies, func(r reply) bool { return r.ok }) {
			return nil, err
		}
		return replies, nil
	}
}
