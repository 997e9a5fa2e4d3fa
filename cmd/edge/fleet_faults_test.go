package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// inventedID is the one property of the forged snapshots.
const inventedID = "0badc0de-0000-4000-8000-000000000001"

// forgedPayload is a well-formed snapshot payload of one invented property
// loaded at at.
func forgedPayload(t *testing.T, at time.Time) []byte {
	t.Helper()
	payload, err := fleet.EncodeSnapshot([]mapping.Property{{ID: inventedID, Name: "Invented Palace",
		Status: mapping.StatusActive, Timezone: "Europe/Berlin", CreatedAt: at, UpdatedAt: at}}, at)
	if err != nil {
		t.Fatal(err)
	}
	return payload
}

// unsignedFrame is a publication frame as the store wrote it before
// docs/contract.md section 15: frame version 1, the version, the publish time, the
// payload; no HMAC.
func unsignedFrame(at time.Time, payload []byte) []byte {
	b := make([]byte, 17, 17+len(payload))
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:9], uint64(at.UnixMilli()))
	binary.BigEndian.PutUint64(b[9:17], uint64(at.UnixMilli()))
	return append(b, payload...)
}

// signedFrame is a frame as an instance holding secret writes it
// (upstream/fleet/store.go): frame version 2, the version, the publish
// time, HMAC-SHA256 of the key name and all that, then the payload.
func signedFrame(name string, secret []byte, at time.Time, payload []byte) []byte {
	b := make([]byte, 17, 17+32+len(payload))
	b[0] = 2
	binary.BigEndian.PutUint64(b[1:9], uint64(at.UnixMilli()))
	binary.BigEndian.PutUint64(b[9:17], uint64(at.UnixMilli()))
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(name))
	m.Write(b[:17])
	m.Write(payload)
	b = append(b, m.Sum(nil)...)
	return append(b, payload...)
}

// listIDs lists the first page of properties from e with key.
func listIDs(t *testing.T, e *edgeProc, key string) (int, []string) {
	t.Helper()
	res, body := getWithKey(t, e.base+"properties?perPage=100", key)
	var page struct {
		Data []struct{ ID string } `json:"data"`
	}
	_ = json.Unmarshal(body, &page)
	ids := make([]string, len(page.Data))
	for i, d := range page.Data {
		ids[i] = d.ID
	}
	return res.StatusCode, ids
}

// docs/contract.md section 15: anyone who can write to Redis stores
// a well-formed snapshot of one invented property dated ten years ahead
// under the live snapshot key, unsigned; then one signed with the fleet's
// secret but dated in the future; then one signed with another secret.
// Three real edges on the real Redis keep serving the PMS's properties and
// never the invented one. A refusal is logged once a minute per cause
// (docs/operations.md, "What to watch"): the third forgery, refused for the
// same cause as the first (not signed with the fleet's secret) a moment
// later, is held for three TTLs without a line of its own.
func TestForgedSnapshotNeverServed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs three processes")
	}
	bin := buildEdge(t)
	srv := redistest.Start(t)
	open, openRec := keystest.Mint(t, "aurora", keys.ModeLive)
	keyFile := keystest.File(t, openRec)
	pms := newWalkCountingPMS(t)
	// A short cache TTL: every edge loads again from Redis twice a second.
	const ttl = 500 * time.Millisecond
	edges := startFleetWith(t, bin, 3, keyFile, pms.srv.URL, "EDGE_REDIS_URL="+srv.URL(), "EDGE_CACHE_TTL="+ttl.String())
	code, pmsIDs := listIDs(t, edges[0], open)
	if code != 200 || len(pmsIDs) == 0 {
		t.Fatalf("before the forgery: %d, %v", code, pmsIDs)
	}

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	name := fleet.SnapKey("aurora", "live") + ":data"
	future := time.Now().AddDate(10, 0, 0)
	for _, forgery := range []struct {
		what  string
		frame []byte
		line  bool // a refusal line of its own: the first of its cause within the minute
	}{
		{"unsigned, dated ten years ahead", unsignedFrame(future, forgedPayload(t, future)), true},
		{"signed with the fleet's secret, dated a minute ahead", signedFrame(name, []byte(testFleetSecret), time.Now().Add(time.Minute), forgedPayload(t, time.Now().Add(time.Minute))), true},
		{"signed with another secret", signedFrame(name, []byte(strings.Repeat("z", 32)), time.Now().Add(time.Minute), forgedPayload(t, time.Now().Add(time.Minute))), false},
	} {
		refusedBefore := 0
		for _, e := range edges {
			refusedBefore += e.stderr.Count("shared snapshot refused")
		}
		if err := rdb.Set(context.Background(), name, forgery.frame, 0).Err(); err != nil {
			t.Fatal(err)
		}
		// Past the TTL every edge loads again: look for three TTLs, and
		// on until an edge has read the forgery and logged its refusal.
		// A walk under way when the forgery was written publishes over
		// it, maybe before any edge read it: until one refuses it, the
		// forgery is written again each round.
		deadline := time.Now().Add(3 * ttl)
		for refused := false; !refused || time.Now().Before(deadline); {
			refusedNow := 0
			for _, e := range edges {
				refusedNow += e.stderr.Count("shared snapshot refused")
			}
			if refused = refusedNow > refusedBefore || !forgery.line; !refused || !forgery.line {
				if err := rdb.Set(context.Background(), name, forgery.frame, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if time.Now().After(deadline.Add(testkit.EventuallyTimeout)) {
				t.Fatalf("%s: no edge logged the forgery's refusal %v past three TTLs", forgery.what, testkit.EventuallyTimeout)
			}
			for _, e := range edges {
				code, ids := listIDs(t, e, open)
				if code != 200 || len(ids) == 0 {
					t.Fatalf("%s: %s answered %d with %d properties; want the PMS's", forgery.what, e.base, code, len(ids))
				}
				for _, id := range ids {
					if id == inventedID {
						t.Fatalf("%s: %s serves the forged snapshot's invented property", forgery.what, e.base)
					}
				}
			}
			time.Sleep(50 * time.Millisecond) // poll interval; outside event: the edge processes' next loads from Redis
		}
	}
}

// docs/contract.md section 15: Redis under maxmemory with
// noeviction refuses every write (OOM) while reads still work. Every
// edge's /fleet reports Redis as not shared within 5 s, each logs the
// refusal once, and a key limited to 5/s (burst 5) stays within the
// fallback bound of docs/scaling.md across three edges: N x (burst + rate
// x window).
func TestRedisRefusingWritesIsUnavailable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs three processes")
	}
	bin := buildEdge(t)
	srv := redistest.Start(t)
	limited, open, keyFile := fleetKeys(t)
	pms := newWalkCountingPMS(t)
	edges := startFleet(t, bin, 3, keyFile, pms.srv.URL, srv.URL())
	if !allShared(t, edges, true) {
		t.Fatalf("not shared before the fault")
	}

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1mb"}} {
		if err := rdb.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	filler := strings.Repeat("f", 64<<10)
	for i := 0; ; i++ { // fill Redis until it refuses writes
		err := rdb.Set(ctx, fmt.Sprintf("filler:%d", i), filler, 0).Err()
		if err != nil && strings.HasPrefix(err.Error(), "OOM") {
			break
		}
		if err != nil || i > 1000 {
			t.Fatalf("filling Redis: %v after %d values", err, i)
		}
	}
	// Full by a margin: keys that expire meanwhile (the fleet's own) must
	// not let a write through, or the fence falls and rises again.
	if err := rdb.ConfigSet(ctx, "maxmemory", "512kb").Err(); err != nil {
		t.Fatal(err)
	}
	full := time.Now()

	const window = 4 * time.Second
	l := startLoad(edges, limited, open)
	deadline := full.Add(5 * time.Second)
	for !allShared(t, edges, false) {
		if time.Now().After(deadline) {
			l.stop()
			for _, e := range edges {
				res, err := http.Get(e.admin + "/fleet")
				if err == nil {
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					t.Logf("%s/fleet: %s", e.admin, b)
				}
			}
			t.Fatalf("/fleet still reports Redis as shared 5 s after it began refusing writes")
		}
		time.Sleep(50 * time.Millisecond) // outside event: the edge processes' /fleet state
	}
	t.Logf("every /fleet reports the fallback %s after Redis filled up", time.Since(full).Round(10*time.Millisecond))
	start := l.snapshot()
	time.Sleep(window) // measured window: the load generator's traffic to the edge processes
	end := l.snapshot()
	l.stop()
	accepted := end.limitedOK - start.limitedOK
	bound := 3 * (5 + 5*4) * 110 / 100 // N x (burst + rate x window), +10%
	t.Logf("limited key accepted %d in %s across three edges (fallback bound %d)", accepted, window, bound)
	if accepted > bound {
		t.Errorf("accepted %d in %s; want at most %d (docs/scaling.md's fallback bound)", accepted, window, bound)
	}
	if bad := end.bad; len(bad) > 0 {
		t.Errorf("answers other than 200/429: %v", bad)
	}
	for _, e := range edges {
		if n := strings.Count(e.stderr.String(), "redis refuses writes"); n != 1 {
			t.Errorf("%s logged the refusal %d times; want once", e.base, n)
			t.Logf("%s", e.stderr.String())
		}
	}
}
