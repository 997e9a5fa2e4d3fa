package testkit

import (
	"testing"
	"time"
)

// EventuallyTimeout bounds Eventually: generous, because the machine may
// be busy, and reached only when the test fails.
const EventuallyTimeout = 30 * time.Second

// Eventually polls cond until it holds, and fails t (naming what was
// awaited) if it still does not after EventuallyTimeout. It is for events
// outside the test's control (a process listening, a file watcher firing,
// a span ending just after its answer), never for a timer of the code
// under test: inject a clock or use testing/synctest for those.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(EventuallyTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %s", what, EventuallyTimeout)
		}
		time.Sleep(5 * time.Millisecond) // the outside event: poll again soon
	}
}
