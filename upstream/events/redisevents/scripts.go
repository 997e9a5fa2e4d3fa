package redisevents

import "github.com/redis/go-redis/v9"

// The feed of one PMS is three keys sharing a hash tag (one Cluster slot,
// so one script touches them together; docs/scaling.md, "The events
// feed"): the stream of events (:s, ids walk-index), the feed's state (:m,
// a hash: walk, the last walk appended; floor, the stream id a cursor may
// not be older than) and the base (:b, the last walk's properties, signed).

// appendScript appends one walk: KEYS stream, state, base; ARGV prev walk
// (0: none), walk, the retention's cut (ms), max, the base's frame (""
// when unchanged), the keys' expiry (ms), then five per event: id,
// property, type, data, MAC. It writes nothing and answers 0 unless the
// feed's last walk is prev and walk is newer (compare and set: one append
// per walk whoever else walked). The first walk starts the feed: its floor
// is the end of that walk. Trimming (MINID for retention, MAXLEN for max)
// raises the floor to the last id it drops.
var appendScript = redis.NewScript(`
local function parse(s)
  local m, q = string.match(s, '^(%d+)-(%d+)$')
  return tonumber(m), tonumber(q)
end
local cur = tonumber(redis.call('HGET', KEYS[2], 'walk') or '0')
local prev, walk = tonumber(ARGV[1]), tonumber(ARGV[2])
if cur ~= prev or walk <= cur then return 0 end
local floor = redis.call('HGET', KEYS[2], 'floor')
if cur == 0 or not floor then
  redis.call('DEL', KEYS[1])
  floor = ARGV[2] .. '-4294967295'
end
local function raise(to)
  local fm, fs = parse(floor)
  local tm, ts = parse(to)
  if tm > fm or (tm == fm and ts > fs) then floor = to end
end
for i = 7, #ARGV, 5 do
  redis.call('XADD', KEYS[1], ARGV[i], 'p', ARGV[i+1], 't', ARGV[i+2], 'd', ARGV[i+3], 'm', ARGV[i+4])
end
local old = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[3] .. '-0', '-', 'COUNT', 1)
if #old > 0 then
  raise(old[1][1])
  redis.call('XTRIM', KEYS[1], 'MINID', ARGV[3])
end
local n, max = redis.call('XLEN', KEYS[1]), tonumber(ARGV[4])
if n > max then
  local dropped = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', n - max)
  raise(dropped[#dropped][1])
  redis.call('XTRIM', KEYS[1], 'MAXLEN', max)
end
if ARGV[5] ~= '' then redis.call('SET', KEYS[3], ARGV[5]) end
redis.call('HSET', KEYS[2], 'walk', ARGV[2], 'floor', floor)
for k = 1, 3 do redis.call('PEXPIRE', KEYS[k], ARGV[6]) end
return 1`)

// baseScript answers the feed's last walk and, unless it is ARGV[1], at
// most ARGV[2]+1 bytes of the base: KEYS state, base.
var baseScript = redis.NewScript(`
local walk = redis.call('HGET', KEYS[1], 'walk')
if not walk then return {'0', false} end
if walk == ARGV[1] then return {walk, false} end
return {walk, redis.call('GETRANGE', KEYS[2], 0, ARGV[2])}`)

// readScript answers the feed's last walk, its floor and at most ARGV[2]
// events after the id ARGV[1]: KEYS stream, state.
var readScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[2], 'walk', 'floor')
if not m[1] or not m[2] then return {'0', '', {}} end
return {m[1], m[2], redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])}`)
