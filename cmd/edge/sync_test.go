package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// docs/partner-api.md section 6, "The recipe", through the built binary: a
// partner keeps a copy of the active properties its key may see while the
// PMS churns, and after every catch-up the copy equals the edge's list.

// syncPartner keeps a copy of the active properties by the recipe, over
// plain HTTP and JSON as a partner would, its requests spread over the
// members it is given in turn (a load balancer's round robin).
type syncPartner struct {
	members []partner
	turn    int
	perPage int
	copy    map[string]json.RawMessage // by id, each as the edge served it (compacted)
	at      string                     // the cursor it follows the feed from
	expired int                        // 410 LIST_SNAPSHOT_EXPIRED while listing
	seen    map[string]int             // the event types applied, and "inactive" for those that made one inactive
}

func newSyncPartner(members []partner) *syncPartner {
	return &syncPartner{members: members, perPage: 5, seen: map[string]int{}}
}

// member is the next member in turn.
func (c *syncPartner) member() partner {
	c.turn++
	return c.members[c.turn%len(c.members)]
}

// listPage is one list answer as a partner decodes it.
type listPage struct {
	Data []json.RawMessage `json:"data"`
	Meta struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
		Events struct {
			Next string `json:"next"`
		} `json:"events"`
	} `json:"meta"`
}

// idOf is the id of a property or event's data, and its status.
func idOf(t *testing.T, raw json.RawMessage) (id, status string) {
	t.Helper()
	var p struct{ ID, Status string }
	if err := json.Unmarshal(raw, &p); err != nil || p.ID == "" {
		t.Fatalf("a property without an id: %s", raw)
	}
	return p.ID, p.Status
}

// compact is raw without insignificant spaces: two answers' properties
// compare byte for byte.
func compact(t *testing.T, raw json.RawMessage) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// listing lists every page: page 1 without asOf, the others pinned to its
// meta.events.next (steps 1 and 2 of the recipe). It answers the listed
// properties by id, their order and page 1's cursor; ok is false when a
// pinned page was 410 LIST_SNAPSHOT_EXPIRED (the member asked no longer
// holds that snapshot, or in a fleet never did): list again.
func (c *syncPartner) listing(t *testing.T, straddle bool) (props map[string]json.RawMessage, order []string, cursor string, ok bool) {
	t.Helper()
	props = map[string]json.RawMessage{}
	total := 0
	for page := 1; ; page++ {
		q := fmt.Sprintf("properties?perPage=%d", c.perPage)
		if page > 1 {
			q += fmt.Sprintf("&page=%d&asOf=%s", page, cursor)
		}
		m := c.member()
		code, body := m.get(t, q)
		if code == http.StatusGone && page > 1 {
			var pb struct{ Code string }
			if json.Unmarshal(body, &pb) != nil || pb.Code != "LIST_SNAPSHOT_EXPIRED" {
				t.Fatalf("%s%s: %d %s; a 410 is LIST_SNAPSHOT_EXPIRED", m.base, q, code, body)
			}
			c.expired++
			return nil, nil, "", false
		}
		var l listPage
		if code != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Fatalf("%s%s: %d %s", m.base, q, code, body)
		}
		if page == 1 {
			cursor, total = l.Meta.Events.Next, l.Meta.Pagination.Total
			if straddle { // a listing as long as a brand's: the edge walks the churning PMS before page 2
				testkit.Eventually(t, "a walk after page 1", func() bool { return c.current(t) != cursor })
			}
		} else if l.Meta.Events.Next != cursor || l.Meta.Pagination.Total != total {
			t.Fatalf("page %d pinned to %s: total %d, next %s; want page 1's total %d and cursor", page, cursor, l.Meta.Pagination.Total, l.Meta.Events.Next, total)
		}
		for _, raw := range l.Data {
			id, status := idOf(t, raw)
			if _, dup := props[id]; dup || status != "active" {
				t.Fatalf("page %d pinned to %s: %s listed twice, or not active (%s)", page, cursor, id, status)
			}
			props[id] = compact(t, raw)
			order = append(order, id)
		}
		if len(l.Data) == 0 || page*c.perPage >= total {
			if len(props) != total {
				t.Fatalf("the listing pinned to %s holds %d properties; its total is %d", cursor, len(props), total)
			}
			return props, order, cursor, true
		}
	}
}

// start lists (again after a 410) and makes the listing its copy,
// replacing the one it had: the feed is followed from its cursor. The
// listing straddles a walk: the PMS changes between page 1 and the others.
func (c *syncPartner) start(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, "a listing pinned to its first page", func() bool {
		props, _, cursor, ok := c.listing(t, true)
		c.copy, c.at = props, cursor
		return ok
	})
}

// eventPage is one events answer as a partner decodes it.
type eventPage struct {
	Data []struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	} `json:"data"`
	Meta struct {
		Events struct {
			Next    string `json:"next"`
			HasMore bool   `json:"hasMore"`
		} `json:"events"`
	} `json:"meta"`
}

// events reads one page of the feed after after from m; the partner's
// cursors never expire here (the feed is kept: EDGE_DATA_DIR, Redis).
func (c *syncPartner) events(t *testing.T, m partner, after string, limit int) eventPage {
	t.Helper()
	q := fmt.Sprintf("events?limit=%d&after=%s", limit, after)
	code, body := m.get(t, q)
	var p eventPage
	if code != http.StatusOK || json.Unmarshal(body, &p) != nil {
		t.Fatalf("%s%s: %d %s", m.base, q, code, body)
	}
	return p
}

// catchUp follows the feed until hasMore is false, applying each event
// (step 3 of the recipe): created and updated store data if it is active
// and delete the id otherwise; removed deletes the id.
func (c *syncPartner) catchUp(t *testing.T) {
	t.Helper()
	for {
		p := c.events(t, c.member(), c.at, 7)
		for _, e := range p.Data {
			id, status := idOf(t, e.Data)
			c.seen[e.Type]++
			switch {
			case e.Type == "property.removed":
				delete(c.copy, id)
			case e.Type != "property.created" && e.Type != "property.updated":
				// new types may appear: ignored
			case status == "active":
				c.copy[id] = compact(t, e.Data)
			default:
				if _, had := c.copy[id]; had {
					c.seen["inactive"]++
				}
				delete(c.copy, id)
			}
		}
		c.at = p.Meta.Events.Next
		if !p.Meta.Events.HasMore {
			return
		}
	}
}

// beyond reports whether any member has an event after the list cursor
// cursor. Asked a cursor past the walk it has read, a fleet member reads
// the shared feed first: after a false answer every member holds the
// feed up to cursor's walk.
func (c *syncPartner) beyond(t *testing.T, cursor string) bool {
	t.Helper()
	for _, m := range c.members {
		if len(c.events(t, m, cursor, 1).Data) > 0 {
			return true
		}
	}
	return false
}

// check lists afresh (as a second partner would), catches the copy up and
// compares them, when the feed's position after the catch-up is the
// fresh listing's walk: every member is made to read the feed up to the
// listing's cursor, and no event is after it on any member before or
// after the catch-up. compared is false when the feed moved past the
// listing (a walk fell in between) or a pinned page expired: check
// again.
func (c *syncPartner) check(t *testing.T) (cursor string, compared bool) {
	t.Helper()
	fresh, order, cursor, ok := c.listing(t, false)
	if !ok || c.beyond(t, cursor) {
		return cursor, false
	}
	c.catchUp(t)
	if c.beyond(t, cursor) {
		return cursor, false
	}
	for _, id := range order {
		switch have, ok := c.copy[id]; {
		case !ok:
			t.Errorf("listing %s: the copy lacks %s %s", cursor, id, fresh[id])
		case !bytes.Equal(have, fresh[id]):
			t.Errorf("listing %s: the copy holds %s\nthe list %s", cursor, have, fresh[id])
		}
	}
	for id, have := range c.copy {
		if _, ok := fresh[id]; !ok {
			t.Errorf("listing %s: the copy holds %s, not in the list: %s", cursor, id, have)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return cursor, true
}

// current is the list cursor of the snapshot a member serves now.
func (c *syncPartner) current(t *testing.T) string {
	t.Helper()
	m := c.member()
	code, body := m.get(t, "properties?perPage=1")
	var l listPage
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("%sproperties?perPage=1: %d %s", m.base, code, body)
	}
	return l.Meta.Events.Next
}

// serving waits until every member lists (a restarted one answers 503
// until it has a snapshot: the partner comes back later).
func (c *syncPartner) serving(t *testing.T) {
	t.Helper()
	for _, m := range c.members {
		testkit.Eventually(t, m.base+" lists", func() bool {
			code, _ := m.get(t, "properties?perPage=1")
			return code == http.StatusOK
		})
	}
}

// follow keeps the copy for walks walks of the edge (distinct listings it
// was compared with), calling restart before the comparisons its keys
// name (restart then replaces members as it needs). It lists at the
// start and again every seventh walk from the third (as after a lost
// copy), each listing straddling a walk.
func (c *syncPartner) follow(t *testing.T, walks int, restarts map[int]func()) {
	t.Helper()
	c.start(t)
	last := c.at
	for n, listed := 0, -1; n < walks; {
		if r := restarts[n]; r != nil {
			r()
			delete(restarts, n)
		}
		if n%7 == 3 && listed != n {
			c.start(t)
			listed = n
		}
		testkit.Eventually(t, fmt.Sprintf("walk %d after the last compared", n+1), func() bool { return c.current(t) != last })
		testkit.Eventually(t, fmt.Sprintf("catch-up %d at a walk the feed did not move past", n+1), func() bool {
			cursor, ok := c.check(t)
			if ok && cursor != last {
				last = cursor
				n++
				return true
			}
			return false
		})
	}
	t.Logf("%d walks compared; %d properties in the copy; events applied %v; %d pinned listings expired", walks, len(c.copy), c.seen, c.expired)
	for _, kind := range []string{"property.created", "property.updated", "property.removed", "inactive"} {
		if c.seen[kind] == 0 {
			t.Errorf("no %s among the events applied (%v): the churn did not exercise it", kind, c.seen)
		}
	}
}

// churningPMS is a live simulator making every kind of change
// (pmsim.ChurnKinds: renames, status changes, replacements, records that
// stop and start mapping, removals, creations) every 150 ms while the edge
// walks it, over pages of 10 records: a walk straddles churn steps.
func churningPMS(t *testing.T) *feedPMS {
	t.Helper()
	return newFeedPMSWith(t, pmsim.Config{Seed: 54, Churn: 150 * time.Millisecond,
		ChurnChanges: len(pmsim.ChurnKinds), PageSize: 10})
}

// churnedEveryKind fails t unless the simulator made every kind of change.
func churnedEveryKind(t *testing.T, sim *pmsim.Sim) {
	t.Helper()
	c := sim.Stats().Churn
	t.Logf("the PMS churned %d steps, %+v", c.Steps, c)
	for kind, n := range map[string]int64{pmsim.ChurnRename: c.Rename, pmsim.ChurnStatus: c.Status, pmsim.ChurnReplace: c.Replace,
		pmsim.ChurnUnmap: c.Unmap, pmsim.ChurnRemap: c.Remap, pmsim.ChurnRemove: c.Remove, pmsim.ChurnCreate: c.Create} {
		if n == 0 {
			t.Errorf("the PMS made no %s change", kind)
		}
	}
}

// syncWalks is how many walks the partner's copy is compared at, and
// syncTTL the edge's EDGE_CACHE_TTL: a walk about every syncTTL, and time
// enough between two for a listing and a catch-up on a busy machine.
const (
	syncWalks = 21
	syncTTL   = "800ms"
)

// docs/partner-api.md section 6 and docs/contract.md section 25: a partner
// lists with asOf and follows the feed while the PMS churns every kind of
// change, for 21 walks (EDGE_CACHE_TTL=800ms, pages of 5); after every
// catch-up its copy (the active properties) equals a fresh listing, ids
// and JSON. A single edge with EDGE_DATA_DIR is stopped (SIGTERM) and
// later killed (SIGKILL) and started again, the PMS changing while it is
// down, the partner keeping its cursor; a fleet of three on a real
// redis-server has a member stopped and one killed and started again, the
// partner's requests spread over the members.
func TestPartnerSyncThroughTheBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and follows 21 walks of a churning PMS per case")
	}
	bin := buildEdge(t)
	k := newFeedKeys(t, []string{"*"})

	t.Run("single edge with EDGE_DATA_DIR", func(t *testing.T) {
		t.Parallel()
		pms := churningPMS(t)
		env := feedEdgeEnv(pms, k, "EDGE_CACHE_TTL="+syncTTL, "EDGE_DATA_DIR="+filepath.Join(t.TempDir(), "data"))
		edge := startEdgeProc(t, bin, env)
		c := newSyncPartner([]partner{{"http://" + edge.addr + "/v1/", k.live}})
		restart := func(sig syscall.Signal) func() {
			return func() {
				if err := edge.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				<-edge.exited
				pms.live.Churn() // changes while it is down
				edge = startEdgeProc(t, bin, env)
				c.members = []partner{{"http://" + edge.addr + "/v1/", k.live}}
				c.serving(t)
				t.Logf("the edge restarted after %s", sig)
			}
		}
		c.follow(t, syncWalks, map[int]func(){7: restart(syscall.SIGTERM), 14: restart(syscall.SIGKILL)})
		churnedEveryKind(t, pms.live)
	})

	t.Run("fleet of three on redis-server", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t) // the real redis-server (required under CI=true)
		pms := churningPMS(t)
		edges := startFleetWith(t, bin, 3, k.file, pms.liveURL, "EDGE_REDIS_URL="+srv.URL(),
			"EDGE_CACHE_TTL="+syncTTL, "EDGE_ACCESS_LOG=off")
		members := func() []partner {
			var ps []partner
			for _, e := range edges {
				ps = append(ps, partner{e.base, k.live})
			}
			return ps
		}
		c := newSyncPartner(members())
		restart := func(i int, sig syscall.Signal) func() {
			return func() {
				edges[i] = restartMember(t, bin, edges[i], sig)
				c.members = members()
				c.serving(t)
				t.Logf("member %d restarted after %s", i, sig)
			}
		}
		c.follow(t, syncWalks, map[int]func(){7: restart(1, syscall.SIGTERM), 14: restart(2, syscall.SIGKILL)})
		churnedEveryKind(t, pms.live)
	})

	// The recipe without asOf (every page read from the data current when
	// it is asked for) misses a property: page 1 is read, a property of
	// it is removed, and the property that was first on page 2 moves onto
	// page 1, already read; it never changes, so no event names it. The
	// same listing pinned with asOf keeps it.
	t.Run("without asOf a property is missed", func(t *testing.T) {
		t.Parallel()
		pms := newFeedPMS(t)
		live := partner{startFeedEdge(t, pms, k), k.live}
		first := live.page(t, "perPage=5")
		all := live.page(t, "perPage=100&asOf="+first.next)
		if len(all.ids) < 10 || !slices.Equal(all.ids[:5], first.ids) {
			t.Fatalf("page 1 %v; the list pinned to it %v", first.ids, all.ids)
		}
		gone, shifted := first.ids[1], all.ids[5]
		edit(t, pms.live, func(rec map[string]any) map[string]any {
			if hotel(rec) == gone {
				return nil
			}
			return rec
		})
		testkit.Eventually(t, "the edge walked the removal", func() bool {
			return !slices.Contains(live.page(t, "perPage=100").ids, gone)
		})
		recipe := func(pin string) map[string]bool {
			copy := map[string]bool{}
			for _, id := range first.ids {
				copy[id] = true
			}
			for page := 2; ; page++ {
				p := live.page(t, fmt.Sprintf("perPage=5&page=%d%s", page, pin))
				if len(p.ids) == 0 {
					break
				}
				for _, id := range p.ids {
					copy[id] = true
				}
			}
			for _, e := range live.follow(t, first.next) {
				if e.Type != "property.removed" && e.Data.Status == "active" {
					copy[e.Data.ID] = true
				} else {
					delete(copy, e.Data.ID)
				}
			}
			return copy
		}
		now := live.page(t, "perPage=100").ids
		offsets, pinned := recipe(""), recipe("&asOf="+first.next)
		if !slices.Contains(now, shifted) || offsets[shifted] || len(offsets) != len(now)-1 {
			t.Errorf("without asOf: the copy holds %s: %v, %d properties against the list's %d; want it missed", shifted, offsets[shifted], len(offsets), len(now))
		}
		if len(pinned) != len(now) || !pinned[shifted] {
			t.Errorf("with asOf: the copy holds %d properties, %s: %v; want the list's %d", len(pinned), shifted, pinned[shifted], len(now))
		}
		for _, id := range now {
			if !pinned[id] {
				t.Errorf("with asOf: the copy lacks %s", id)
			}
		}
	})
}
