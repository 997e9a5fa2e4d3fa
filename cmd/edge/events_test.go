package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// The events feed through the built binary (docs/contract.md section 23).
// The PMS is the simulator in this process; the tests change its records
// and read what the edge makes of them.

// feedPMS is a live and a sandbox simulator, each on its own server.
type feedPMS struct {
	live, sandbox       *pmsim.Sim
	liveURL, sandboxURL string
}

func newFeedPMS(t *testing.T) *feedPMS {
	t.Helper()
	return newFeedPMSWith(t, pmsim.Config{Seed: 23})
}

// newFeedPMSWith is newFeedPMS with live's simulator configured by live
// (its token set).
func newFeedPMSWith(t *testing.T, live pmsim.Config) *feedPMS {
	t.Helper()
	live.Token = "pms-secret-token"
	p := &feedPMS{live: pmsim.New(live),
		sandbox: pmsim.New(pmsim.Config{Seed: 24, HotelsPerBrand: 12, Token: "pms-secret-token"})}
	for _, s := range []struct {
		sim *pmsim.Sim
		url *string
	}{{p.live, &p.liveURL}, {p.sandbox, &p.sandboxURL}} {
		srv := httptest.NewServer(s.sim)
		t.Cleanup(srv.Close)
		*s.url = srv.URL
	}
	return p
}

// records are sim's records of aurora, decoded.
func records(t *testing.T, sim *pmsim.Sim) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, raw := range sim.Records("aurora") {
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// edit changes the records of aurora in sim: edit gets each decoded (nil
// removes it); add appends records.
func edit(t *testing.T, sim *pmsim.Sim, change func(rec map[string]any) map[string]any, add ...map[string]any) {
	t.Helper()
	var out []json.RawMessage
	for _, rec := range records(t, sim) {
		if rec = change(rec); rec != nil {
			b, _ := json.Marshal(rec)
			out = append(out, b)
		}
	}
	for _, rec := range add {
		b, _ := json.Marshal(rec)
		out = append(out, b)
	}
	sim.SetRecords("aurora", out)
}

// record is a copy of sim's record of the property id.
func record(t *testing.T, sim *pmsim.Sim, id string) map[string]any {
	t.Helper()
	for _, rec := range records(t, sim) {
		if hotel(rec) == id {
			return rec
		}
	}
	t.Fatalf("no record of %s", id)
	return nil
}

// hotel is a record's id as partners see it (lower case).
func hotel(rec map[string]any) string { return strings.ToLower(fmt.Sprint(rec["hotel_id"])) }

// partner calls one edge with one key.
type partner struct {
	base, key string // base: http://host:port/v1/
}

func (p partner) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("User-Agent", "events-test/1.0")
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body
}

// list answers the active ids of the first page of 100 and the list's
// meta.events.next.
func (p partner) list(t *testing.T) (ids []string, cursor string) {
	t.Helper()
	code, body := p.get(t, "properties?perPage=100")
	var l struct {
		Data []struct{ ID string } `json:"data"`
		Meta struct {
			Events struct{ Next string } `json:"events"`
		} `json:"meta"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil || !strings.HasPrefix(l.Meta.Events.Next, "evt_") {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, d := range l.Data {
		ids = append(ids, d.ID)
	}
	return ids, l.Meta.Events.Next
}

// feedEvent is one event as a partner decodes it.
type feedEvent struct {
	Object     string `json:"object"`
	ID         string `json:"id"`
	Type       string `json:"type"`
	OccurredAt string `json:"occurredAt"`
	Data       struct {
		ID, Name, Status string
	} `json:"data"`
}

func (e feedEvent) String() string { return e.Type + " " + e.Data.ID + " " + e.Data.Name }

// follow reads the feed after after to its end, three at a time; it fails
// the test on any answer but 200.
func (p partner) follow(t *testing.T, after string) []feedEvent {
	t.Helper()
	var out []feedEvent
	for {
		q := "events?limit=3"
		if after != "" {
			q += "&after=" + after
		}
		code, body := p.get(t, q)
		var a struct {
			Data []feedEvent `json:"data"`
			Meta struct {
				Events struct {
					Next    string `json:"next"`
					HasMore bool   `json:"hasMore"`
				} `json:"events"`
			} `json:"meta"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &a) != nil {
			t.Fatalf("events after %q: %d %s", after, code, body)
		}
		if len(a.Data) == 0 && after != "" && a.Meta.Events.Next != after && !a.Meta.Events.HasMore {
			t.Errorf("an empty page's next is %q; want the given after %q", a.Meta.Events.Next, after)
		}
		out = append(out, a.Data...)
		if after = a.Meta.Events.Next; !a.Meta.Events.HasMore {
			return out
		}
	}
}

// problemCode is the code of a problem answer to path.
func (p partner) problemCode(t *testing.T, path string) (int, string, []string) {
	t.Helper()
	code, body := p.get(t, path)
	var pb struct {
		Code   string `json:"code"`
		Errors []struct{ Field, Code string }
	}
	_ = json.Unmarshal(body, &pb)
	var fields []string
	for _, f := range pb.Errors {
		fields = append(fields, f.Field+" "+f.Code)
	}
	return code, pb.Code, fields
}

// feedKeys are the keys of the feed tests: every live property, three of
// them, and the sandbox.
type feedKeys struct {
	file                string
	live, granted, test string
}

func newFeedKeys(t *testing.T, granted []string) feedKeys {
	t.Helper()
	var k feedKeys
	var live, grantedRec, test keys.Record
	k.live, live = keystest.Mint(t, "aurora", keys.ModeLive)
	k.granted, grantedRec = keystest.Mint(t, "aurora", keys.ModeLive)
	grantedRec.Properties = granted
	k.test, test = keystest.Mint(t, "aurora", keys.ModeTest)
	k.file = keystest.File(t, live, grantedRec, test)
	return k
}

// startFeedEdge starts one edge on pms with keys, a cache TTL of 300 ms
// (a walk about every 300 ms while partners call) and extra settings.
func startFeedEdge(t *testing.T, pms *feedPMS, k feedKeys, extra ...string) string {
	t.Helper()
	return "http://" + startEdgeProc(t, buildEdge(t), feedEdgeEnv(pms, k, extra...)).addr + "/v1/"
}

// feedEdgeEnv is the environment startFeedEdge starts an edge with: extra
// settings override its own (the last of a name wins).
func feedEdgeEnv(pms *feedPMS, k feedKeys, extra ...string) []string {
	return append([]string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + k.file,
		"PMS_BASE_URL=" + pms.liveURL, "PMS_SANDBOX_URL=" + pms.sandboxURL, "PMS_TOKEN=pms-secret-token",
		"EDGE_DOCS_URL=" + testDocsURL, "EDGE_CACHE_TTL=300ms", "EDGE_ACCESS_LOG=off",
	}, extra...)
}

// liveIDs are the active ids of pms's live simulator, as the edge lists
// them, without an edge of the test's: a throwaway one.
func liveIDs(t *testing.T, pms *feedPMS) []string {
	t.Helper()
	k := newFeedKeys(t, []string{"*"})
	ids, _ := partner{startFeedEdge(t, pms, k), k.live}.list(t)
	if len(ids) < 10 {
		t.Fatalf("%d active properties; the test wants 10", len(ids))
	}
	return ids
}

// docs/contract.md section 23, acceptance 1 and 2: list, take the cursor,
// change the PMS: the feed answers the changes in order (updated with the
// new Property, removed with the last one served, created), evt_ ids,
// occurredAt in milliseconds; the first walk makes none; a record that
// stops mapping is removed and comes back created. A key granted three
// properties sees theirs only; a test key the sandbox's only.
func TestEventsFollowThePMSThroughTheBinary(t *testing.T) {
	t.Parallel()
	pms := newFeedPMS(t)
	ids := liveIDs(t, pms)
	k := newFeedKeys(t, []string{ids[0], ids[1], ids[5]})
	base := startFeedEdge(t, pms, k)
	live, granted, test := partner{base, k.live}, partner{base, k.granted}, partner{base, k.test}
	_, cursor := live.list(t)
	_, grantedCursor := granted.list(t)
	_, testCursor := test.list(t)
	if got := live.follow(t, ""); len(got) != 0 {
		t.Fatalf("the first walk made events: %v", got)
	}

	renamed, removed, added := ids[0], ids[1], "0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c"
	// The three changes are one edit of the PMS, so one walk sees them all
	// (two edits let a walk fall between them: two walks' events).
	template := record(t, pms.live, ids[2])
	template["hotel_id"], template["display_name"] = added, "Aurora Added"
	var oldName string
	edit(t, pms.live, func(rec map[string]any) map[string]any {
		switch hotel(rec) {
		case renamed:
			rec["display_name"] = "Aurora Renamed"
		case removed:
			oldName = strings.TrimSpace(fmt.Sprint(rec["display_name"]))
			return nil
		}
		return rec
	}, template)

	var got []feedEvent
	testkit.Eventually(t, "the feed answers the three changes", func() bool {
		got = live.follow(t, cursor)
		return len(got) >= 3
	})
	want := map[string]string{renamed: "property.updated " + renamed + " Aurora Renamed",
		removed: "property.removed " + removed + " " + oldName, added: "property.created " + added + " Aurora Added"}
	order := slices.Sorted(maps.Keys(want)) // one walk's events are in id order
	if len(got) != 3 {
		t.Fatalf("events %v; want 3", got)
	}
	for i, id := range order {
		e := got[i]
		if e.String() != want[id] || e.Object != "event" || !strings.HasPrefix(e.ID, "evt_") ||
			!strings.HasSuffix(e.OccurredAt, "Z") || len(e.OccurredAt) != len("2026-11-22T09:41:00.000Z") {
			t.Errorf("event %d: %+v; want %s", i, e, want[id])
		}
	}
	if g := granted.follow(t, grantedCursor); len(g) != 2 || g[0].Data.ID == added || g[1].Data.ID == added {
		t.Errorf("the key granted %v sees %v; want its two changed properties only", []string{ids[0], ids[1], ids[5]}, g)
	}
	if g := test.follow(t, testCursor); len(g) != 0 {
		t.Errorf("the test key sees the live PMS's changes: %v", g)
	}
	sandboxIDs, _ := test.list(t)
	edit(t, pms.sandbox, func(rec map[string]any) map[string]any {
		if hotel(rec) == sandboxIDs[0] {
			return nil
		}
		return rec
	})
	testkit.Eventually(t, "the test key sees the sandbox's change", func() bool {
		g := test.follow(t, testCursor)
		return len(g) == 1 && g[0].Type == "property.removed" && g[0].Data.ID == sandboxIDs[0]
	})
	if g := live.follow(t, cursor); len(g) != 3 {
		t.Errorf("the live key after the sandbox's change: %v; want its three", g)
	}

	// A record that stops mapping (a time zone nobody knows) is removed;
	// mended, it is created again.
	_, cursor = live.list(t)
	var zone any
	edit(t, pms.live, func(rec map[string]any) map[string]any {
		if hotel(rec) == ids[3] {
			zone, rec["time_zone"] = rec["time_zone"], "Mars/Olympus_Mons"
		}
		return rec
	})
	testkit.Eventually(t, "the record that stopped mapping is removed", func() bool {
		g := live.follow(t, cursor)
		return len(g) == 1 && g[0].Type == "property.removed" && g[0].Data.ID == ids[3]
	})
	edit(t, pms.live, func(rec map[string]any) map[string]any {
		if hotel(rec) == ids[3] {
			rec["time_zone"] = zone
		}
		return rec
	})
	testkit.Eventually(t, "mended, it is created again", func() bool {
		g := live.follow(t, cursor)
		return len(g) == 2 && g[1].Type == "property.created" && g[1].Data.ID == ids[3]
	})
}

// README.md: the demo's banner has a curl line for the feed that answers
// 200 with events and a cursor to follow.
func TestDemoBannerFollowsTheFeed(t *testing.T) {
	t.Parallel()
	s := start(t, map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off"})
	base := s.waitFor(t, urlLine)[1]
	waitHealthy(t, base)
	line := s.waitFor(t, regexp.MustCompile(`(?m)^\s*curl -H 'Authorization: Bearer (\S+)' (\S+/v1/events)$`))
	code, body := partner{base, line[1]}.get(t, strings.TrimPrefix(line[2], base))
	var a struct {
		Data []feedEvent `json:"data"`
		Meta struct {
			Events struct{ Next string } `json:"events"`
		} `json:"meta"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &a) != nil || a.Data == nil || !strings.HasPrefix(a.Meta.Events.Next, "evt_") {
		t.Errorf("the banner's events line: %d %s", code, body)
	}
}

// renameAll renames every record of sim: each walk after it has an update
// per property.
func renameAll(t *testing.T, sim *pmsim.Sim, suffix string) {
	t.Helper()
	edit(t, sim, func(rec map[string]any) map[string]any {
		rec["display_name"] = fmt.Sprint(rec["display_name"]) + suffix
		return rec
	})
}

// docs/contract.md section 23, acceptance 3: limit and after validated as
// perPage is; with EDGE_EVENTS_MAX=1 a cursor before the dropped events
// is 410, and with a short retention one before an event past it.
func TestEventsCursorChecksThroughTheBinary(t *testing.T) {
	t.Parallel()
	pms := newFeedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	base := startFeedEdge(t, pms, k, "EDGE_EVENTS_MAX=1")
	live := partner{base, k.live}
	_, cursor := live.list(t)
	for _, tc := range []struct {
		query  string
		status int
		code   string
		fields []string
	}{
		{"events?limit=0", 422, "VALIDATION_FAILED", []string{"limit OUT_OF_RANGE"}},
		{"events?limit=101", 422, "VALIDATION_FAILED", []string{"limit OUT_OF_RANGE"}},
		{"events?after=evt_000", 422, "VALIDATION_FAILED", []string{"after INVALID_FORMAT"}},
		{"events?after=" + cursor[:len(cursor)-1] + "x&limit=500", 422, "VALIDATION_FAILED", []string{"after INVALID_FORMAT", "limit OUT_OF_RANGE"}},
		{"events?limit=1.5", 400, "INVALID_QUERY_PARAMETER", []string{"limit INVALID_FORMAT"}},
		{"events?after=" + cursor + "&after=" + cursor, 400, "INVALID_QUERY_PARAMETER", []string{"after INVALID_FORMAT"}},
	} {
		if status, code, fields := live.problemCode(t, tc.query); status != tc.status || code != tc.code || !slices.Equal(fields, tc.fields) {
			t.Errorf("%s: %d %s %v; want %d %s %v", tc.query, status, code, fields, tc.status, tc.code, tc.fields)
		}
	}
	renameAll(t, pms.live, " I") // many events, one kept
	testkit.Eventually(t, "the cursor before the dropped events is 410", func() bool {
		status, code, _ := live.problemCode(t, "events?after="+cursor)
		return status == http.StatusGone && code == "EVENTS_CURSOR_EXPIRED"
	})
	if got := live.follow(t, ""); len(got) != 1 {
		t.Errorf("from the oldest kept: %v; want the one event EDGE_EVENTS_MAX keeps", got)
	}

	short := partner{startFeedEdge(t, pms, k, "EDGE_EVENTS_RETENTION=1s"), k.live}
	// The renames' events are read in one page (limit 100) within their
	// second: on a busy machine a read may come later, when they are
	// gone already (410, as the contract says); then list and rename
	// again.
	var last string
	for round := 1; last == ""; round++ {
		if round > 20 {
			t.Fatalf("%d rounds of renames, each gone before it was read", round-1)
		}
		_, cursor = short.list(t)
		renameAll(t, pms.live, fmt.Sprintf(" II.%d", round))
		testkit.Eventually(t, "the renames are events, or gone", func() bool {
			code, body := short.get(t, "events?limit=100&after="+cursor)
			var a struct{ Data []feedEvent }
			switch {
			case code == http.StatusGone:
				return true // past the retention before it was read: again
			case code != http.StatusOK || json.Unmarshal(body, &a) != nil:
				t.Fatalf("events after %q: %d %s", cursor, code, body)
			case len(a.Data) > 0:
				last = a.Data[len(a.Data)-1].ID
				return true
			}
			return false
		})
	}
	testkit.Eventually(t, "past the retention, the cursor before them is 410", func() bool {
		status, code, _ := short.problemCode(t, "events?after="+cursor)
		return status == http.StatusGone && code == "EVENTS_CURSOR_EXPIRED"
	})
	if got := short.follow(t, last); len(got) != 0 { // nothing after it was lost
		t.Errorf("after the last event: %v", got)
	}
}

// docs/contract.md section 23: a single edge keeps its events in memory; a
// restarted one answers 410 to a cursor from before.
func TestEventsRestartedEdgeExpiresCursors(t *testing.T) {
	t.Parallel()
	pms := newFeedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	env := []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + k.file,
		"PMS_BASE_URL=" + pms.liveURL, "PMS_TOKEN=pms-secret-token", "EDGE_DOCS_URL=" + testDocsURL, "EDGE_ACCESS_LOG=off",
	}
	first := startEdgeProc(t, buildEdge(t), env)
	_, cursor := partner{"http://" + first.addr + "/v1/", k.live}.list(t)
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	again := partner{"http://" + startEdgeProc(t, buildEdge(t), env).addr + "/v1/", k.live}
	again.list(t) // its first walk: the baseline
	if status, code, _ := again.problemCode(t, "events?after="+cursor); status != http.StatusGone || code != "EVENTS_CURSOR_EXPIRED" {
		t.Errorf("a cursor from before the restart: %d %s; want 410 EVENTS_CURSOR_EXPIRED", status, code)
	}
}

// docs/contract.md section 23, acceptance 4: a fleet of three edges on one
// real Redis (one primary; Sentinel) has one feed: every member answers
// the same events, ids and order, and each walk is appended once (the
// stream holds each event once).
func TestEventsOneFeedPerFleet(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs a Redis and three edges per form")
	}
	t.Run("primary", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t) // the real redis-server (required under CI=true)
		fleetFeed(t, redis.NewClient(&redis.Options{Addr: srv.Addr()}), "EDGE_REDIS_URL="+srv.URL())
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		s := redistest.StartSentinel(t)
		fleetFeed(t, redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: s.Sentinels}),
			"EDGE_REDIS_SENTINELS="+strings.Join(s.Sentinels, ","), "EDGE_REDIS_MASTER="+redistest.SentinelMaster)
	})
}

func fleetFeed(t *testing.T, rdb redis.UniversalClient, redisEnv ...string) {
	t.Cleanup(func() { _ = rdb.Close() })
	pms := newFeedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	edges := startFleetWith(t, buildEdge(t), 3, k.file, pms.liveURL, redisEnv...)
	members := make([]partner, len(edges))
	for i, e := range edges {
		members[i] = partner{e.base, k.live}
	}
	ids, cursor := members[0].list(t)
	for _, m := range members[1:] {
		m.list(t)
	}
	var walks int
	for _, change := range []func(){
		func() { renameAll(t, pms.live, " I") },
		func() {
			edit(t, pms.live, func(rec map[string]any) map[string]any {
				if hotel(rec) == ids[0] {
					return nil
				}
				return rec
			})
		},
	} {
		change()
		walks++
		var want []feedEvent
		testkit.Eventually(t, fmt.Sprintf("change %d reaches the feed of every member", walks), func() bool {
			for i, m := range members {
				got := m.follow(t, cursor)
				if i == 0 {
					want = got
				}
				if len(got) == 0 || !slices.Equal(got, want) || (walks == 2 && got[len(got)-1].Type != "property.removed") {
					return false
				}
			}
			return true
		})
		n, err := rdb.XLen(context.Background(), "pe:ev2:{aurora:live}:s").Result()
		if err != nil || int(n) != len(want) {
			t.Errorf("after change %d: the stream holds %d events (%v), members answer %d: each walk is appended once", walks, n, err, len(want))
		}
		t.Logf("change %d: %d events, the same ids in the same order from the three members", walks, len(want))
	}
}

// docs/contract.md section 23, Redis cannot steer the feed: a forged
// floor in Redis once made every cursor 410, a fresh list's too, and the
// edges then handed out cursors they refused. Through the binary, on a
// real Redis: every member still answers the cursors from before and
// from after the forgery, logs it at ERROR, and the feed goes on.
func TestEventsForgedFloorThroughTheBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and runs a Redis and three edges")
	}
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	pms := newFeedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	edges := startFleetWith(t, buildEdge(t), 3, k.file, pms.liveURL, "EDGE_REDIS_URL="+srv.URL())
	members := make([]partner, len(edges))
	for i, e := range edges {
		members[i] = partner{e.base, k.live}
	}
	_, before := members[0].list(t)
	for i, m := range members[1:] {
		m.list(t)
		// Each member knows before's walk while the feed reads: under a
		// forged floor one that had not learned it could not tell it
		// from a cursor never issued (503, ask again).
		if code, body := m.get(t, "events?after="+before); code != http.StatusOK {
			t.Fatalf("member %d, cursor %s: %d %s; want 200", i+1, before, code, body)
		}
	}
	if err := rdb.HSet(context.Background(), "pe:ev2:{aurora:live}:m", "floor", "99999999999999-0").Err(); err != nil {
		t.Fatal(err)
	}
	logged := func() bool {
		for _, e := range edges {
			for _, line := range strings.Split(e.stderr.String(), "\n") {
				if strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, `"cause":"state"`) {
					return true
				}
			}
		}
		return false
	}
	testkit.Eventually(t, "a member logs the forged fields at ERROR", func() bool {
		for i, m := range members {
			_, fresh := m.list(t)
			for _, c := range []string{before, fresh} {
				if code, body := m.get(t, "events?after="+c); code != http.StatusOK {
					t.Fatalf("member %d, cursor %s under a forged floor: %d %s; want 200", i, c, code, body)
				}
			}
		}
		return logged()
	})
	renameAll(t, pms.live, " F")
	testkit.Eventually(t, "the rename reaches the feed of every member", func() bool {
		for _, m := range members {
			got := m.follow(t, before)
			if len(got) == 0 || !strings.HasSuffix(got[len(got)-1].Data.Name, " F") {
				return false
			}
		}
		return true
	})
}
