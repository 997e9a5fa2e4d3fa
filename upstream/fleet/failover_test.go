package fleet

import (
	"slices"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// docs/contract.md section 16, failover is routine: when a Cluster fails over the primary
// of the snapshot's slot (killed; its replica promoted after the node
// timeout), the client with its default guard follows within 10 s of the
// promotion without a restart, and Nodes names the new primary.
func TestClusterFailoverFollowed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a six-node Cluster through a failover")
	}
	c := redistest.StartClusterWith(t, redistest.ClusterOptions{Replicas: 1})
	client, err := redisconn.New(redisconn.Config{Cluster: c.Nodes[:3]}) // the default guard: 100 ms calls, 2 s open
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	watchClient(t, client, 0) // as the edge runs it: it finds the new primary once the breaker opens
	store := NewStore(client, 0, testSecret)
	name := SnapKey("acme", "live")
	// The first call dials the Cluster and learns its slots within the
	// guard's 100 ms, which a loaded machine may miss (the breaker then
	// opens, and the watch closes it): the outside event is a call that
	// makes it, before the failover this test is about.
	testkit.Eventually(t, "a first publish to the new Cluster", func() bool {
		return store.Publish(t.Context(), name, 1, []byte("before"), time.Minute) == nil
	})
	old := c.PrimaryOf(name + ":data")
	c.Kill(old)
	killed := time.Now()
	var promoted time.Time
	var primary string
	for {
		if promoted.IsZero() {
			if p := c.PrimaryOf(name + ":data"); p != "" && p != old {
				promoted, primary = time.Now(), p
			}
		}
		err := store.Publish(t.Context(), name, 2, []byte("after"), time.Minute)
		if err == nil && !promoted.IsZero() {
			break
		}
		if time.Since(killed) > testkit.EventuallyTimeout {
			t.Fatalf("%v after the kill: promoted %v, publish %v", testkit.EventuallyTimeout, !promoted.IsZero(), err)
		}
		time.Sleep(50 * time.Millisecond) // outside events: the Cluster's failover, the client's calls
	}
	followed := time.Now()
	t.Logf("primary %s killed; the Cluster promoted %s after %s; the client wrote to it %s after the promotion (%s after the kill)",
		old, primary, promoted.Sub(killed).Round(10*time.Millisecond), followed.Sub(promoted).Round(10*time.Millisecond),
		followed.Sub(killed).Round(10*time.Millisecond))
	if d := followed.Sub(promoted); d > 10*time.Second {
		t.Errorf("followed the promotion after %s; want within 10 s", d)
	}
	if got, v, _, err := store.Fetch(t.Context(), name); err != nil || string(got) != "after" || v != 2 {
		t.Errorf("fetch after the failover: %q v%d, %v", got, v, err)
	}
	if n := client.Nodes(t.Context()); !slices.Contains(n, primary) {
		t.Errorf("Nodes %v; want the new primary %s among them", n, primary)
	}
}
