package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// TestMain fails the package if any goroutine (a load, a refresh, a store
// janitor) outlives the tests (docs/resilience.md).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeCatalog is a Catalog of function fields that counts its calls.
type fakeCatalog struct {
	snapshot  func(ctx context.Context) (*upstream.Snapshot, error)
	property  func(ctx context.Context, id string) (*upstream.Item, error)
	snapCalls atomic.Int64
	propCalls atomic.Int64
}

var _ upstream.Catalog = (*fakeCatalog)(nil)

func (f *fakeCatalog) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	f.snapCalls.Add(1)
	return f.snapshot(ctx)
}

func (f *fakeCatalog) Property(ctx context.Context, id string) (*upstream.Item, error) {
	f.propCalls.Add(1)
	return f.property(ctx, id)
}

// newClock is an injected Config.Now.
func newClock() *testkit.Clock {
	return testkit.NewClockAt(time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC))
}

// onTheDay is a Config.Now on newClock's fixed day that moves with the
// wall clock or, made inside a synctest bubble, with the bubble's: for a
// cache whose TTL, back-off and walks must run as before while its dates
// sit on the tests' day (docs/testing.md, "Time in tests").
func onTheDay() func() time.Time { return testkit.From(newClock().Now()) }

// outcomes counts Config.OnOutcome reports.
type outcomes struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *outcomes) record(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = map[string]int{}
	}
	o.n[s]++
}

func (o *outcomes) get(s string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[s]
}

func propertyID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// testItem is the mapped property i; version changes its name, so two loads
// of the same property are told apart by their JSON.
func testItem(i, version int) *upstream.Item {
	created := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
	return upstream.NewItem(mapping.Property{
		ID:        propertyID(i),
		Name:      fmt.Sprintf("Hotel %d v%d", i, version),
		Status:    mapping.StatusActive,
		Timezone:  "Europe/Berlin",
		CreatedAt: created,
		UpdatedAt: created,
	})
}

// testSnapshot holds properties 0..n-1 at version.
func testSnapshot(n, version int) *upstream.Snapshot {
	items := make([]*upstream.Item, n)
	for i := range items {
		items[i] = testItem(i, version)
	}
	return upstream.NewSnapshot(items, time.Time{})
}

// versioned is a fakeCatalog whose every load returns the next version of
// n properties; fail, when set, is returned instead.
type versioned struct {
	fakeCatalog
	version atomic.Int64
	fail    atomic.Pointer[upstream.Error]
}

func newVersioned(n int) *versioned {
	v := &versioned{}
	v.snapshot = func(context.Context) (*upstream.Snapshot, error) {
		if pe := v.fail.Load(); pe != nil {
			return nil, pe
		}
		return testSnapshot(n, int(v.version.Add(1))), nil
	}
	v.property = func(_ context.Context, id string) (*upstream.Item, error) {
		if pe := v.fail.Load(); pe != nil {
			return nil, pe
		}
		for i := range n {
			if propertyID(i) == id {
				return testItem(i, int(v.version.Add(1))), nil
			}
		}
		return nil, &upstream.Error{Kind: upstream.NotFound, Err: errors.New("not found")}
	}
	return v
}

func mustJSON(t *testing.T, s *upstream.Snapshot) string {
	t.Helper()
	if s == nil {
		t.Fatal("nil snapshot")
	}
	var b []byte
	for _, it := range s.Active {
		b = append(b, it.JSON...)
		b = append(b, '\n')
	}
	return string(b)
}
