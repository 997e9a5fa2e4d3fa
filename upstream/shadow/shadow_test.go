package shadow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmscheck"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// clientConfig is a client of h served in process.
func clientConfig(h http.Handler) pms.ClientConfig {
	return pms.ClientConfig{BaseURL: "http://pms.test", Transport: testkit.InProcess{Handler: h},
		CallTimeout: 5 * time.Second, AttemptTimeout: 2 * time.Second}
}

// arrivals records when list requests reach a PMS (the bubble's clock).
type arrivals struct {
	h  http.Handler
	mu sync.Mutex
	at []time.Time
}

func (a *arrivals) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/hotels") {
		a.mu.Lock()
		a.at = append(a.at, time.Now())
		a.mu.Unlock()
	}
	a.h.ServeHTTP(w, r)
}

func (a *arrivals) times() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.at)
}

// edgeMode is one mode's read model as the edge builds it: live client,
// Direct, cache with the shadow hooked after its loads; it refreshes ahead
// at half the TTL, as a fleet member does (its live walks come oftener
// than the candidate's interval).
func edgeMode(t *testing.T, sh *Shadow, mode string, live http.Handler, ttl time.Duration) *cache.Cache {
	t.Helper()
	client, err := pms.NewClient(clientConfig(live))
	if err != nil {
		t.Fatal(err)
	}
	direct := pms.NewDirect(client, pms.DirectOptions{Brand: "aurora"})
	c := cache.New(direct, cache.Config{Key: "aurora/" + mode, TTL: ttl, RefreshAhead: 0.5, Load: sh.After(mode, direct.Snapshot)})
	t.Cleanup(c.Close)
	return c
}

// comparedWithinTwoTTLs runs a shadow of candidate until ctx ends, beside
// the live mode of the seed-1 simulator (TTL 30 s), reads the live brand
// once as a partner would, and returns the shadow and its live comparison
// two TTLs later (nil: none). It runs inside a synctest bubble.
func comparedWithinTwoTTLs(ctx context.Context, t *testing.T, candidate http.Handler) (*Shadow, *Comparison) {
	t.Helper()
	const ttl = 30 * time.Second
	sh := newShadow(t, candidate, ttl)
	go sh.Run(ctx)
	c := edgeMode(t, sh, "live", pmsim.New(pmsim.Config{Seed: 1}), ttl)
	if _, err := c.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // the bubble's clock
	synctest.Wait()
	return sh, sh.Latest()["live"]
}

func newShadow(t *testing.T, candidate http.Handler, interval time.Duration) *Shadow {
	t.Helper()
	sh, err := New(Config{Candidate: clientConfig(candidate), Brand: "aurora", Interval: interval, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// TestCandidateWalkedAtMostOncePerTTL: whatever the partner traffic (a
// read every 50 ms for ten minutes, on two modes), each mode's candidate
// is walked at most once per TTL, and is walked (docs/contract.md section 14).
func TestCandidateWalkedAtMostOncePerTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 30 * time.Second
		cand := &arrivals{h: pmsim.New(pmsim.Config{Seed: 1})}
		sh := newShadow(t, cand, ttl)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); sh.Run(ctx) }()
		liveSim := &arrivals{h: pmsim.New(pmsim.Config{Seed: 1})}
		modes := map[string]*cache.Cache{
			"live": edgeMode(t, sh, "live", liveSim, ttl),
			"test": edgeMode(t, sh, "test", pmsim.New(pmsim.Config{Seed: 2}), ttl),
		}
		start := time.Now()
		for time.Since(start) < 10*time.Minute {
			for _, c := range modes {
				if _, err := c.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(50 * time.Millisecond) // the bubble's clock
			synctest.Wait()
		}
		cancel()
		<-done

		walks := sh.Walks("live") + sh.Walks("test")
		at := cand.times()
		if len(at) != walks {
			t.Fatalf("%d candidate list requests for %d walks", len(at), walks)
		}
		maxWalks := int(10*time.Minute/ttl) + 1
		for _, mode := range []string{"live", "test"} {
			if n := sh.Walks(mode); n < 2 || n > maxWalks {
				t.Errorf("%s: %d candidate walks in 10 min, want 2..%d", mode, n, maxWalks)
			}
		}
		// The live PMS was walked more often than the candidate (refresh
		// ahead at half the TTL), and each live walk was a chance to walk it.
		if len(liveSim.times()) <= sh.Walks("live") {
			t.Errorf("%d live walks, %d candidate walks: the gate was never exercised", len(liveSim.times()), sh.Walks("live"))
		}
		t.Logf("live walks %d, candidate walks live %d test %d", len(liveSim.times()), sh.Walks("live"), sh.Walks("test"))
	})
}

// TestCandidateWalksSpacedByTTL: consecutive walks of one mode start at
// least one TTL apart (the bubble's clock).
func TestCandidateWalksSpacedByTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 10 * time.Second
		cand := &arrivals{h: pmsim.New(pmsim.Config{Seed: 1})}
		sh := newShadow(t, cand, ttl)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go sh.Run(ctx)
		c := edgeMode(t, sh, "live", pmsim.New(pmsim.Config{Seed: 1}), ttl)
		start := time.Now()
		for time.Since(start) < 3*time.Minute {
			_, _ = c.Property(ctx, "00000000-0000-4000-8000-000000000001")
			time.Sleep(7 * time.Millisecond) // the bubble's clock
			synctest.Wait()
		}
		at := cand.times()
		for i := 1; i < len(at); i++ {
			if gap := at[i].Sub(at[i-1]); gap < ttl {
				t.Errorf("candidate walks %d and %d only %s apart, want at least %s", i-1, i, gap, ttl)
			}
		}
		if len(at) < 5 {
			t.Errorf("%d candidate walks in 3 min at TTL 10 s", len(at))
		}
	})
}

// changedCandidate is the live data of seed 1 with 3 records gone, one
// display name changed and one blanked, and the ids of each.
func changedCandidate(t *testing.T) (cand *pmsim.Sim, removed []string, changed, rejected string) {
	t.Helper()
	live := pmsim.New(pmsim.Config{Seed: 1})
	cand = pmsim.New(pmsim.Config{Seed: 1, Drift: pmsim.Drift{Drop: 3}})
	ids := func(s *pmsim.Sim) map[string]bool {
		out := map[string]bool{}
		for _, raw := range s.Records("aurora") {
			if p, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora"}); err == nil {
				out[p.ID] = true
			}
		}
		return out
	}
	after := ids(cand)
	for id := range ids(live) {
		if !after[id] {
			removed = append(removed, id)
		}
	}
	slices.Sort(removed)
	recs := cand.Records("aurora")
	n := 0
	for i, raw := range recs {
		p, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora"})
		if err != nil {
			continue
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if n == 0 {
			m["display_name"], changed = "Renamed By Backend", p.ID
		} else {
			m["display_name"], rejected = " ", p.ID
		}
		recs[i], _ = json.Marshal(m)
		if n++; n == 2 {
			break
		}
	}
	cand.SetRecords("aurora", recs)
	return cand, removed, changed, rejected
}

// TestShadowReportsDifferencesWithinTwoTTLs: with a changed candidate,
// the comparison is there within two TTLs of the first partner read, with
// counts by kind and examples of ids and public field names only
// (docs/contract.md section 14).
func TestShadowReportsDifferencesWithinTwoTTLs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cand, removed, changed, rejected := changedCandidate(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		sh, got := comparedWithinTwoTTLs(ctx, t, cand)
		if got == nil {
			t.Fatal("no comparison within two TTLs")
		}
		want := Counts{Removed: 3, Changed: 1, Rejected: 1, Live: got.Counts.Live, CandidateProperties: got.Counts.Live - 4}
		if got.Candidate != "ok" || got.Counts != want {
			t.Fatalf("comparison %+v, want counts %+v", got, want)
		}
		var exRemoved []string
		for _, ex := range got.Examples {
			switch ex.Kind {
			case KindRemoved:
				exRemoved = append(exRemoved, ex.ID)
			case KindChanged:
				if ex.ID != changed || !slices.Equal(ex.Fields, []string{"name"}) {
					t.Errorf("changed example %+v, want %s [name]", ex, changed)
				}
			case KindRejected:
				if ex.ID != rejected || ex.Reason != mapping.ReasonEmptyName {
					t.Errorf("rejected example %+v, want %s empty_name", ex, rejected)
				}
			}
		}
		slices.Sort(exRemoved)
		if !slices.Equal(exRemoved, removed) {
			t.Errorf("removed examples %v, want %v", exRemoved, removed)
		}

		rec := httptest.NewRecorder()
		Handler(sh).ServeHTTP(rec, httptest.NewRequest("GET", "/shadow", nil))
		body := rec.Body.String()
		for _, secret := range []string{pmsim.LeakMarker, "Renamed By Backend", "display_name", "owner", "internal"} {
			if strings.Contains(body, secret) {
				t.Errorf("/shadow shows %q: %s", secret, body)
			}
		}
		var st State
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || !st.Configured || len(st.Comparisons) != 1 {
			t.Errorf("/shadow: %v %s", err, body)
		}
	})
}

// TestShadowExamplesBounded: at most MaxExamples examples, whatever the
// number of differences; the counts stay exact.
func TestShadowExamplesBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cand := pmsim.New(pmsim.Config{Seed: 1, Drift: pmsim.Drift{Rename: map[string]string{"display_name": "name"}}})
		sh := newShadow(t, cand, time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go sh.Run(ctx)
		c := edgeMode(t, sh, "live", pmsim.New(pmsim.Config{Seed: 1, HotelsPerBrand: 200}), time.Minute)
		if _, err := c.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := sh.Latest()["live"]
		if got == nil || len(got.Examples) != MaxExamples || got.Counts.Removed+got.Counts.Rejected != got.Counts.Live {
			t.Fatalf("comparison %+v: want %d examples and every live property removed or rejected", got, MaxExamples)
		}
	})
}

// TestHangingCandidateNeverDelaysALoad: a candidate that never answers
// leaves each live load as fast as without it (no fake time passes in the
// load), and ends as a failed comparison after its own deadline; Run stops
// with its context.
func TestHangingCandidateNeverDelaysALoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		sh := newShadow(t, hang, time.Second)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); sh.Run(ctx) }()
		c := edgeMode(t, sh, "live", pmsim.New(pmsim.Config{Seed: 1}), 0) // TTL 0: every read loads
		for range 20 {
			start := time.Now()
			if _, err := c.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d != 0 {
				t.Fatalf("a load took %s of fake time with a hanging candidate", d)
			}
			time.Sleep(100 * time.Millisecond) // the bubble's clock
		}
		time.Sleep(10 * time.Second) // the bubble's clock
		synctest.Wait()
		got := sh.Latest()["live"]
		if got == nil || got.Candidate != "failed" || got.Error != upstream.Timeout.String() || got.Cause != "timeout" {
			t.Fatalf("comparison %+v, want a failed walk (timeout)", got)
		}
		cancel()
		<-done
	})
}

// TestNilShadowHandler: without a candidate /shadow says so.
func TestNilShadowHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/shadow", nil))
	if got := strings.TrimSpace(rec.Body.String()); got != `{"configured":false,"comparisons":[]}` {
		t.Errorf("/shadow without candidate: %s", got)
	}
}

// TestShadowComparesAsTheWholeWalk: the comparison the shadow makes while
// it walks (pmscheck.Comparer) is the one of the whole walk kept and
// compared afterwards (pms.Direct's properties and rejections,
// pmscheck.Compare), counts and examples alike, on a candidate with every
// kind of difference: records gone, renamed, blanked, added, of another
// brand, listed twice (the second changed, or with an upper-case id), and
// a live record rejected twice for two reasons.
func TestShadowComparesAsTheWholeWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		live := pmsim.New(pmsim.Config{Seed: 1})
		recs := live.Records("aurora")
		edit := func(raw json.RawMessage, f func(m map[string]any)) json.RawMessage {
			var m map[string]any
			_ = json.Unmarshal(raw, &m)
			f(m)
			out, _ := json.Marshal(m)
			return out
		}
		var cand []json.RawMessage
		n := 0
		for _, raw := range recs {
			if _, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora"}); err != nil {
				cand = append(cand, raw)
				continue
			}
			n++
			switch n {
			case 1, 2: // gone
			case 3: // rejected twice, for two reasons, and mapped never
				cand = append(cand, edit(raw, func(m map[string]any) { m["time_zone"] = "Mars/Olympus" }),
					edit(raw, func(m map[string]any) { m["display_name"] = " " }))
			case 4: // renamed
				cand = append(cand, edit(raw, func(m map[string]any) { m["display_name"] = "Renamed" }))
			case 5: // listed twice: the second, changed, does not count
				cand = append(cand, raw, edit(raw, func(m map[string]any) { m["display_name"] = "Second" }))
			case 6: // listed twice, the second with its id in upper case
				cand = append(cand, raw, edit(raw, func(m map[string]any) { m["hotel_id"] = strings.ToUpper(m["hotel_id"].(string)) }))
			case 7: // added twice under new ids, and as another brand
				for i, id := range []string{"ffffffff-0000-4000-8000-000000000001", "FFFFFFFF-0000-4000-8000-000000000002"} {
					cand = append(cand, raw, edit(raw, func(m map[string]any) { m["hotel_id"] = id }))
					if i == 0 {
						cand = append(cand, edit(raw, func(m map[string]any) { m["hotel_id"] = id; m["display_name"] = "Again" }))
					}
				}
				cand = append(cand, edit(raw, func(m map[string]any) { m["brand_code"] = "other" }))
			default:
				cand = append(cand, raw)
			}
		}
		candSim := pmsim.New(pmsim.Config{Seed: 1})
		candSim.SetRecords("aurora", cand)

		sh := newShadow(t, candSim, time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go sh.Run(ctx)
		c := edgeMode(t, sh, "live", live, time.Minute)
		snap, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := sh.Latest()["live"]
		if got == nil || got.Candidate != "ok" {
			t.Fatalf("comparison %+v", got)
		}

		// The whole walk, kept and compared afterwards.
		client, err := pms.NewClient(clientConfig(candSim))
		if err != nil {
			t.Fatal(err)
		}
		var rejected []*mapping.Rejection
		props, _, err := pms.NewDirect(client, pms.DirectOptions{Brand: "aurora",
			OnReject: func(_ context.Context, r *mapping.Rejection) { rejected = append(rejected, r) }}).Properties(ctx)
		if err != nil {
			t.Fatal(err)
		}
		whole := pmscheck.NewResult("aurora", "live", "", upstream.ItemsByID(props), rejected)
		base := pmscheck.NewResult("aurora", "live", "", snap.All(), nil)
		diff := pmscheck.Compare(base, whole)
		want := Counts{Added: len(diff.Added), Removed: len(diff.Removed), Changed: len(diff.Changed),
			Rejected: len(diff.Rejected), Live: len(base.Properties), CandidateProperties: len(whole.Properties)}
		if got.Counts != want || !reflect.DeepEqual(got.Examples, examples(diff)) {
			t.Fatalf("while walking: %+v %+v\nwhole walk: %+v %+v", got.Counts, got.Examples, want, examples(diff))
		}
		if want.Added != 2 || want.Removed != 2 || want.Changed != 1 || want.Rejected != 1 {
			t.Fatalf("the candidate's differences are not the ones made: %+v", want)
		}
	})
}

// The shadow names a drift's cause (docs/contract.md section 14): against
// a candidate that renamed display_name, the comparison says the field is
// missing and name appeared, in as many records as the candidate sent;
// against one that retyped hotel_id, the field is another type in every
// record; a candidate like the live PMS drifts not at all.
func TestShadowNamesTheDrift(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drift pmsim.Drift
		want  string
	}{
		{"rename display_name", pmsim.Drift{Rename: map[string]string{"display_name": "name"}}, "field `display_name` missing in %d records, a field `name` appeared in %d records"},
		{"retype hotel_id", pmsim.Drift{Retype: []string{"hotel_id"}}, "field `hotel_id` is object in %d records, want string"},
		{"none", pmsim.Drift{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cand := pmsim.New(pmsim.Config{Seed: 1, Drift: tc.drift})
				n := len(cand.Records("aurora"))
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				_, got := comparedWithinTwoTTLs(ctx, t, cand)
				if got == nil || got.Candidate != "ok" {
					t.Fatalf("comparison %+v", got)
				}
				if tc.want == "" {
					if len(got.Drift) != 0 {
						t.Errorf("drift %+v, want none", got.Drift)
					}
					return
				}
				want := strings.ReplaceAll(tc.want, "%d", strconv.Itoa(n))
				if len(got.Drift) != 1 || got.Drift[0].Message != want || got.Drift[0].Records != n {
					t.Errorf("drift %+v, want %q", got.Drift, want)
				}
			})
		})
	}
}
