package redishooks

import "github.com/redis/go-redis/v9"

// A brand's endpoints are two keys sharing a hash tag (one Cluster slot,
// so one script touches both): the hash of endpoints (:e, field the id,
// value signed: codec.go) and the counter of creations (:n), which orders
// them and which every Create compares and sets, so that two creates
// racing for a key's last place, or for one URL, cannot both pass the
// checks they made on what they read. The scripts hold no secret: the
// member verifies what it read, decides, signs what it writes, and a
// script only checks that what it read is still there before it writes.

// readScript answers the counter ("" for none) and the hash, read
// together: KEYS hash, counter.
var readScript = redis.NewScript(`
return {redis.call('GET', KEYS[2]) or '', redis.call('HGETALL', KEYS[1])}`)

// createScript adds the endpoint ARGV[2] (value ARGV[3]) and sets the
// counter to ARGV[4] if the counter is still ARGV[1] ("": none), answering
// 1; 0 when it moved (another create came first), -1 when the id is
// taken: KEYS hash, counter.
var createScript = redis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then return -1 end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
redis.call('SET', KEYS[2], ARGV[4])
return 1`)

// swapScript replaces the value of endpoint ARGV[1] with ARGV[3] if it is
// still ARGV[2] (the value the member read and verified), answering 1; 0
// when it changed or is gone: KEYS hash.
var swapScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`)

// holdScript takes the lease KEYS[1] for the member ARGV[1] for ARGV[2]
// ms when nobody holds it (SET NX PX), or extends it when that member
// already does (compare and PEXPIRE): 1; 0 when another member holds it.
var holdScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0`)

// releaseScript deletes the lease KEYS[1] if the member ARGV[1] holds it
// (compare and DEL).
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
