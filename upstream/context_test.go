package upstream

import (
	"context"
	"sync"
	"testing"
)

func TestCallStats(t *testing.T) {
	var nilStats *CallStats
	nilStats.AddAttempt()
	nilStats.SetCacheOutcome("hit")
	if nilStats.Attempts() != 0 || nilStats.CacheOutcome() != "" {
		t.Errorf("nil stats recorded something")
	}
	s := &CallStats{}
	ctx := WithCallerIDs(context.Background(), CallerIDs{RequestID: "req_1", Stats: s})
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); CallerIDsFrom(ctx).Stats.AddAttempt() }()
	}
	wg.Wait()
	CallerIDsFrom(ctx).Stats.SetCacheOutcome("miss")
	if s.Attempts() != 3 || s.CacheOutcome() != "miss" || CallerIDsFrom(ctx).RequestID != "req_1" {
		t.Errorf("stats = %d %q", s.Attempts(), s.CacheOutcome())
	}
	if (CallerIDsFrom(context.Background()) != CallerIDs{}) {
		t.Errorf("empty context carries ids")
	}
}
