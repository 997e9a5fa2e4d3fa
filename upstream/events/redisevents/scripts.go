package redisevents

import "github.com/redis/go-redis/v9"

// The feed of one PMS is three keys sharing a hash tag (one Cluster slot,
// so one script touches them together; docs/scaling.md, "The events
// feed"): the stream of events (:s, ids walk-index), the feed's state (:m,
// a hash of the position fields, signed: state.go) and the base (:b, the
// last walk's properties, signed: base.go). The scripts hold no secret:
// the member computes and signs every field they write, and a script only
// checks that the state is still the one the member read (a compare and
// set on its signature) before it writes.

// stateFields are the state's fields in the order the scripts answer and
// write them (state.go).
var stateFields = []any{"epoch", "walk", "floor", "last", "n", "nb", "kc", "kb", "cut", "sig"}

// appendScript appends one walk: KEYS stream, state, base; ARGV the
// state's signature as read ("" for none), "1" to start the stream again
// (a new feed), the feed's last event (a stream id: what is past it no
// member wrote), the new state (epoch, walk, floor, last, n, nb, kc, kb,
// cut, sig), the base's frame ("" when unchanged), the keys' expiry (ms),
// the walk's span for its first event's field w ("" for none: read.go,
// spanField), then eight per event: id, property, type, data, previous
// id, count, bytes, MAC. It answers {0, 0} and writes nothing unless the
// state's signature is the one read (another member appended meanwhile).
// Else it removes the stream's entries past the feed's last event and
// sets the stream's last id back to it (a far-future id, deleted or not,
// would refuse every XADD after it), appends, trims the oldest events the
// new state's thresholds drop (an entry whose count is below kc, whose
// bytes are at most kb, or whose walk is before cut: XTRIM MINID at the
// first one kept) and answers {1, how many forged entries or ids it
// removed}.
var appendScript = redis.NewScript(`
local function later(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am) or 0, tonumber(as) or 0, tonumber(bm) or 0, tonumber(bs) or 0
  return am > bm or (am == bm and as > bs)
end
if (redis.call('HGET', KEYS[2], 'sig') or '') ~= ARGV[1] then return {0, 0} end
local removed = 0
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[1])
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  while true do
    local extra = redis.call('XRANGE', KEYS[1], '(' .. ARGV[3], '+', 'COUNT', 1000)
    if #extra == 0 then break end
    for _, e in ipairs(extra) do redis.call('XDEL', KEYS[1], e[1]) end
    removed = removed + #extra
  end
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' and later(info[i+1], ARGV[3]) then
      redis.call('XSETID', KEYS[1], ARGV[3])
      if removed == 0 then removed = 1 end
    end
  end
end
for i = 17, #ARGV, 8 do
  if i == 17 and ARGV[16] ~= '' then
    redis.call('XADD', KEYS[1], ARGV[i], 'p', ARGV[i+1], 't', ARGV[i+2], 'd', ARGV[i+3],
      'v', ARGV[i+4], 'c', ARGV[i+5], 'b', ARGV[i+6], 'm', ARGV[i+7], 'w', ARGV[16])
  else
    redis.call('XADD', KEYS[1], ARGV[i], 'p', ARGV[i+1], 't', ARGV[i+2], 'd', ARGV[i+3],
      'v', ARGV[i+4], 'c', ARGV[i+5], 'b', ARGV[i+6], 'm', ARGV[i+7])
  end
end
local kc, kb, cut = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local keep, from, any = nil, '-', false
while true do
  local es = redis.call('XRANGE', KEYS[1], from, '+', 'COUNT', 100)
  if #es == 0 then break end
  any = true
  for _, e in ipairs(es) do
    local c, b = 0, 0
    for j = 1, #e[2], 2 do
      if e[2][j] == 'c' then c = tonumber(e[2][j+1]) or 0 elseif e[2][j] == 'b' then b = tonumber(e[2][j+1]) or 0 end
    end
    local ms = tonumber(string.match(e[1], '^(%d+)-')) or 0
    if c >= kc and b > kb and ms >= cut then keep = e[1] break end
  end
  if keep then break end
  from = '(' .. es[#es][1]
end
if keep then
  redis.call('XTRIM', KEYS[1], 'MINID', keep)
elseif any then
  redis.call('XTRIM', KEYS[1], 'MAXLEN', 0)
end
if ARGV[14] ~= '' then redis.call('SET', KEYS[3], ARGV[14]) end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'epoch', ARGV[4], 'walk', ARGV[5], 'floor', ARGV[6], 'last', ARGV[7],
  'n', ARGV[8], 'nb', ARGV[9], 'kc', ARGV[10], 'kb', ARGV[11], 'cut', ARGV[12], 'sig', ARGV[13])
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ARGV[15]) end
return {1, removed}`)

// stateScript answers the state's fields, the stream's first entry past
// the state's last event, if any, and how many of the stream and the base
// exist: KEYS state, stream, base.
var stateScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'epoch', 'walk', 'floor', 'last', 'n', 'nb', 'kc', 'kb', 'cut', 'sig')
local past = {}
if m[4] and string.match(m[4], '^%d+%-%d+$') then
  past = redis.call('XRANGE', KEYS[2], '(' .. m[4], '+', 'COUNT', 1)
end
return {m, past, redis.call('EXISTS', KEYS[2], KEYS[3])}`)

// baseScript answers the state's fields and, unless its walk is ARGV[1],
// at most ARGV[2]+1 bytes of the base: KEYS state, base.
var baseScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'epoch', 'walk', 'floor', 'last', 'n', 'nb', 'kc', 'kb', 'cut', 'sig')
if m[2] and m[2] == ARGV[1] then return {m, false} end
return {m, redis.call('GETRANGE', KEYS[2], 0, ARGV[2])}`)

// readScript answers the state's fields, the stream's oldest entry and at
// most ARGV[2] entries after the id ARGV[1] up to the state's last event
// (what is past it no member wrote): KEYS stream, state.
var readScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[2], 'epoch', 'walk', 'floor', 'last', 'n', 'nb', 'kc', 'kb', 'cut', 'sig')
local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
local es = {}
if m[4] and string.match(m[4], '^%d+%-%d+$') then
  es = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], m[4], 'COUNT', ARGV[2])
end
return {m, head, es}`)

// tailScript answers at most ARGV[2] entries at or before the id ARGV[1],
// newest first: KEYS stream.
var tailScript = redis.NewScript(`
return redis.call('XREVRANGE', KEYS[1], ARGV[1], '-', 'COUNT', ARGV[2])`)

// headScript answers the stream's oldest entry: KEYS stream.
var headScript = redis.NewScript(`
return redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)`)
