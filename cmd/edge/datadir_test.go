package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// stallingPMS is a PMS whose list pages can be held: once armed, the next
// list request is announced on walking and held until its caller goes
// (the edge killed in the middle of a walk).
type stallingPMS struct {
	sim     *pmsim.Sim
	mu      sync.Mutex
	armed   bool
	walking chan struct{}
}

func (p *stallingPMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/hotels") {
		p.mu.Lock()
		stall := p.armed
		if stall {
			p.armed = false
			close(p.walking)
		}
		p.mu.Unlock()
		if stall {
			<-r.Context().Done()
			return
		}
	}
	p.sim.ServeHTTP(w, r)
}

// arm holds the next list request; the channel closes when it arrives.
func (p *stallingPMS) arm() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.walking = true, make(chan struct{})
	return p.walking
}

// docs/contract.md section 25, "A single edge's feed survives its
// restart": an edge with EDGE_DATA_DIR killed with SIGKILL in the middle of
// a walk and started again answers the cursors it handed out before with
// 200 and the same events (same ids), and a change made in the PMS while it
// was down becomes an event of its first walk.
func TestFeedSurvivesKillThroughTheBinary(t *testing.T) {
	t.Parallel()
	pms := &stallingPMS{sim: pmsim.New(pmsim.Config{Seed: 23, Token: "pms-secret-token"})}
	srv := httptest.NewServer(pms)
	t.Cleanup(srv.Close)
	k := newFeedKeys(t, []string{"*"})
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + k.file,
		"PMS_BASE_URL=" + srv.URL, "PMS_TOKEN=pms-secret-token", "EDGE_DOCS_URL=" + testDocsURL,
		"EDGE_CACHE_TTL=300ms", "EDGE_ACCESS_LOG=off", "EDGE_DATA_DIR=" + dir,
	}
	bin := buildEdge(t)
	first := startEdgeProc(t, bin, env)
	live := partner{"http://" + first.addr + "/v1/", k.live}
	if !strings.Contains(first.stderr.String(), "events feed kept in EDGE_DATA_DIR") {
		t.Errorf("the start-up log does not say where the feed is kept:\n%s", first.stderr.String())
	}
	ids, cursor := live.list(t)
	if len(ids) < 4 {
		t.Fatalf("%d properties; the test wants 4", len(ids))
	}
	edit(t, pms.sim, func(rec map[string]any) map[string]any {
		if hotel(rec) == ids[0] {
			rec["display_name"] = "Aurora Before The Crash"
		}
		return rec
	})
	var before []feedEvent
	testkit.Eventually(t, "the change before the crash is an event", func() bool {
		before = live.follow(t, cursor)
		return len(before) > 0
	})

	// Killed while a walk is under way (its list request held by the PMS;
	// a partner's calls keep the edge walking).
	walking := pms.arm()
	testkit.Eventually(t, "a walk is under way", func() bool {
		select {
		case <-walking:
			return true
		default:
			_, _ = live.get(t, "properties?perPage=1")
			return false
		}
	})
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	// While the edge is down: one property removed, one renamed.
	removed, renamed := ids[1], ids[2]
	edit(t, pms.sim, func(rec map[string]any) map[string]any {
		switch hotel(rec) {
		case removed:
			return nil
		case renamed:
			rec["display_name"] = "Aurora While Down"
		}
		return rec
	})
	if fi, err := os.Stat(filepath.Join(dir, "events.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("events.db: %v %v; want mode 0600", fi, err)
	}

	second := startEdgeProc(t, bin, env)
	live = partner{"http://" + second.addr + "/v1/", k.live}
	if again := live.follow(t, cursor); len(again) < len(before) || !slices.Equal(again[:len(before)], before) {
		t.Fatalf("the cursor from before the restart: %v; want %v first", again, before)
	}
	var after []feedEvent
	testkit.Eventually(t, "the changes made while the edge was down are events", func() bool {
		after = live.follow(t, cursor)[len(before):]
		return len(after) >= 2
	})
	got := []string{after[0].Type + " " + after[0].Data.ID, after[1].Type + " " + after[1].Data.ID}
	want := []string{"property.removed " + removed, "property.updated " + renamed}
	slices.Sort(got)
	slices.Sort(want)
	if len(after) != 2 || !slices.Equal(got, want) {
		t.Errorf("events after the restart: %v; want %v", after, want)
	}
}

// docs/operations.md, EDGE_DATA_DIR: a directory the edge cannot use stops
// start-up, the error naming the setting and why; without the setting the
// start-up log says the feed lives in memory only.
func TestDataDirRefusedAtStartup(t *testing.T) {
	keysFile, _ := keystest.Live(t, "aurora")
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := deployed(map[string]string{"EDGE_KEYS_FILE": keysFile, "EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "",
		"EDGE_DATA_DIR": file})
	err := run(context.Background(), []string{"edge"}, mapEnv(env), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_DATA_DIR") || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("EDGE_DATA_DIR naming a file: %v; want a start-up error naming the setting", err)
	}

	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 3, Token: "pms-secret-token"}))
	t.Cleanup(sim.Close)
	k := newFeedKeys(t, []string{"*"})
	p := startEdgeProc(t, buildEdge(t), []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + k.file,
		"PMS_BASE_URL=" + sim.URL, "PMS_TOKEN=pms-secret-token", "EDGE_DOCS_URL=" + testDocsURL, "EDGE_ACCESS_LOG=off"})
	if !strings.Contains(p.stderr.String(), "events feed kept in memory only") {
		t.Errorf("without EDGE_DATA_DIR the start-up log does not say the feed is in memory only:\n%s", p.stderr.String())
	}
}

// docs/operations.md, EDGE_EVENTS_MAX_BYTES takes bytes or a unit; a
// refused value of it, or of EDGE_EVENTS_MAX, is one error, not a second
// one about the zero put in its place.
func TestEventsBoundSettings(t *testing.T) {
	for v, want := range map[string]int64{"": 64 << 20, "1048576": 1 << 20, "512KiB": 512 << 10, "2GiB": 2 << 30} {
		env := map[string]string{}
		if v != "" {
			env["EDGE_EVENTS_MAX_BYTES"] = v
		}
		s, err := parseSettings(nil, mapEnv(deployed(env)), io.Discard)
		if err != nil || s.EventsMaxBytes != want {
			t.Errorf("EDGE_EVENTS_MAX_BYTES=%q: %d %v; want %d", v, s.EventsMaxBytes, err, want)
		}
	}
	for env, v := range map[string]string{"EDGE_EVENTS_MAX": "abc", "EDGE_EVENTS_MAX_BYTES": "lots", "EDGE_EVENTS_RETENTION": "forever"} {
		_, err := parseSettings(nil, mapEnv(deployed(map[string]string{env: v})), io.Discard)
		if err == nil {
			t.Errorf("%s=%s: no error", env, v)
			continue
		}
		if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.Contains(lines[0], env) {
			t.Errorf("%s=%s: %q; want one error, naming it", env, v, lines)
		}
	}
}

// docs/contract.md section 22: the demo takes EDGE_DATA_DIR (the image
// sets it), as it takes its listeners and logs; a deployment's settings
// still stop it.
func TestDemoTakesDataDir(t *testing.T) {
	s, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_DATA_DIR": t.TempDir()}), io.Discard)
	if err != nil || s.DataDir == "" {
		t.Errorf("the demo with EDGE_DATA_DIR: %v", err)
	}
	_, err = parseSettings(nil, mapEnv(map[string]string{"EDGE_DATA_DIR": t.TempDir(), "EDGE_BRAND": "aurora"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "EDGE_BRAND is set but PMS_BASE_URL is not") || strings.Contains(err.Error(), "EDGE_DATA_DIR is set") {
		t.Errorf("the demo with EDGE_DATA_DIR and EDGE_BRAND: %v; want EDGE_BRAND refused alone", err)
	}
}
