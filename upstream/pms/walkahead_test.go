package pms

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pagedPMS serves list pages by cursor ("" the first): a body, or a status
// when the body is a number of three digits.
func pagedPMS(t *testing.T, pages map[string]string, seen func(cursor string)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := r.URL.Query().Get("cursor")
		if seen != nil {
			seen(cur)
		}
		body, ok := pages[cur]
		if !ok {
			http.Error(w, "no such page", http.StatusInternalServerError)
			return
		}
		if len(body) == 3 && body[0] >= '1' && body[0] <= '5' {
			w.WriteHeader(int(body[0]-'0')*100 + int(body[1]-'0')*10 + int(body[2]-'0'))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// walkResult is what a walk did: the records it handed over, in order,
// and its error.
type walkResult struct {
	recs []string
	err  string
}

func walkWith(t *testing.T, srv *httptest.Server, ahead bool, tune func(*ClientConfig), visit func(rec []byte) error) walkResult {
	t.Helper()
	cfg := testConfig(srv.URL)
	cfg.Retry.MaxRetries = 1
	cfg.WalkAhead = ahead
	if tune != nil {
		tune(&cfg)
	}
	c := newTestClient(t, cfg)
	var res walkResult
	err := c.WalkHotels(context.Background(), "aurora", func(rec []byte) error {
		res.recs = append(res.recs, string(rec))
		if visit != nil {
			return visit(rec)
		}
		return nil
	})
	if err != nil {
		res.err = err.Error()
	}
	return res
}

// TestWalkAheadMatchesOnePageAtATime: on every walk fault, a walk that
// fetches ahead hands over the same records and fails with the same
// error as one that fetches one page at a time (the existing fault tests
// run one page at a time, the zero configuration).
func TestWalkAheadMatchesOnePageAtATime(t *testing.T) {
	p := func(recs, next string) string {
		if next == "" {
			return `{"hotels":[` + recs + `]}`
		}
		return `{"hotels":[` + recs + `],"nextCursor":` + next + `}`
	}
	overBound := errors.New("kept too much")
	for _, tc := range []struct {
		name  string
		pages map[string]string
		tune  func(*ClientConfig)
		visit func(rec []byte) error
	}{
		{name: "three pages", pages: map[string]string{"": p(`1,2`, `"a"`), "a": p(`3`, `"b"`), "b": p(`4,{"x":5}`, ``)}},
		{name: "last cursor null", pages: map[string]string{"": p(`1`, `"a"`), "a": p(`2`, `null`)}},
		{name: "cursor loop", pages: map[string]string{"": p(`1`, `"a"`), "a": p(`2`, `"b"`), "b": p(`3`, `"a"`)}},
		{name: "empty cursor", pages: map[string]string{"": p(`1`, `"a"`), "a": p(`2`, `""`)}},
		{name: "more than MaxPages", pages: map[string]string{"": p(`1`, `"a"`), "a": p(`2`, `"b"`), "b": p(`3`, ``)},
			tune: func(c *ClientConfig) { c.MaxPages = 2 }},
		{name: "over the bytes bound", pages: map[string]string{"": p(`"`+strings.Repeat("x", 60)+`"`, `"a"`), "a": p(`"`+strings.Repeat("y", 60)+`"`, ``)},
			tune: func(c *ClientConfig) { c.MaxWalkBytes = 100 }},
		{name: "bad JSON page", pages: map[string]string{"": p(`1`, `"a"`), "a": `{"hotels":[2,]}`}},
		{name: "page without hotels", pages: map[string]string{"": p(`1`, `"a"`), "a": `{"nextCursor":"b"}`}},
		{name: "hotels null", pages: map[string]string{"": p(`1`, `"a"`), "a": `{"hotels":null}`}},
		{name: "second page fails", pages: map[string]string{"": p(`1`, `"a"`), "a": `503`}},
		{name: "second page 404", pages: map[string]string{"": p(`1`, `"a"`), "a": `404`}},
		{name: "visit fails on the first page", pages: map[string]string{"": p(`1,2,3`, `"a"`), "a": p(`4`, ``)},
			visit: func(rec []byte) error {
				if string(rec) == "2" {
					return overBound
				}
				return nil
			}},
		{name: "visit fails with a cursor loop pending", pages: map[string]string{"": p(`1`, `"a"`), "a": p(`2`, `"a"`)},
			visit: func(rec []byte) error {
				if string(rec) == "2" {
					return OverBound(1)
				}
				return nil
			}},
		{name: "visit fails before an empty cursor", pages: map[string]string{"": p(`1`, `""`)},
			visit: func([]byte) error { return OverBound(1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := pagedPMS(t, tc.pages, nil)
			want := walkWith(t, srv, false, tc.tune, tc.visit)
			got := walkWith(t, srv, true, tc.tune, tc.visit)
			if !slices.Equal(got.recs, want.recs) || got.err != want.err {
				t.Errorf("walking ahead: records %q, error %q;\none page at a time: records %q, error %q",
					got.recs, got.err, want.recs, want.err)
			}
		})
	}
}

// TestWalkAheadOverlaps: with WalkAhead the next page is asked for while
// the records of this one are handed over (the first record's visit
// waits for the PMS to see that request: one page at a time, it never
// would); a paced walk still fetches one page at a time.
func TestWalkAheadOverlaps(t *testing.T) {
	asked := make(chan struct{})
	var once atomic.Bool
	srv := pagedPMS(t, map[string]string{"": `{"hotels":[1,2],"nextCursor":"a"}`, "a": `{"hotels":[3]}`}, func(cursor string) {
		if cursor == "a" && once.CompareAndSwap(false, true) {
			close(asked)
		}
	})
	res := walkWith(t, srv, true, nil, func(rec []byte) error {
		if string(rec) == "1" {
			select {
			case <-asked:
			case <-time.After(30 * time.Second): // a guard, not a timing
				return errors.New("page 2 not asked for while page 1 was handed over")
			}
		}
		return nil
	})
	if res.err != "" || !slices.Equal(res.recs, []string{"1", "2", "3"}) {
		t.Fatalf("records %q, error %q; want 1 2 3 and none", res.recs, res.err)
	}

	// Paced: page 2 is asked for only after page 1's records.
	var visited atomic.Int32
	var early atomic.Bool
	paced := pagedPMS(t, map[string]string{"": `{"hotels":[1,2],"nextCursor":"a"}`, "a": `{"hotels":[3]}`}, func(cursor string) {
		if cursor == "a" && visited.Load() < 2 {
			early.Store(true)
		}
	})
	res = walkWith(t, paced, true, func(c *ClientConfig) { c.ReadBytesPerSecond = 1 << 30 }, func([]byte) error {
		visited.Add(1)
		return nil
	})
	if res.err != "" || early.Load() {
		t.Errorf("paced walk: error %q, page 2 asked for before page 1's records: %v", res.err, early.Load())
	}
}
