package keys

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// watching opens path and runs Watch until the test ends; it returns the
// store, the log and the count of reload attempts.
func watching(t *testing.T, path string) (*Store, *testkit.LogBuffer, *atomic.Int32) {
	t.Helper()
	s, buf, reloads, _ := watchingLooks(t, path)
	return s, buf, reloads
}

// watchingLooks is watching, and also counts the watcher's looks at the
// file after a change (reload or not).
func watchingLooks(t *testing.T, path string) (*Store, *testkit.LogBuffer, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	log, buf := newLogger()
	var reloads atomic.Int32
	s, err := Open(path, Options{Logger: log, OnReload: func(bool) { reloads.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	s.watching = func() { close(ready) }
	var looks atomic.Int32
	s.looked = func() { looks.Add(1) }
	go func() { done <- s.Watch(ctx) }()
	<-ready // the changes a test makes now must arrive as events
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return s, buf, &reloads, &looks
}

func found(s *Store, token string) func() bool {
	return func() bool { _, ok := s.Lookup(token); return ok }
}

func TestWatchPicksUpWrite(t *testing.T) {
	old, oldRec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	path := keyFile(t, oldRec)
	s, buf, _ := watching(t, path)

	writeFile(t, path, marshalFile(t, oldRec, freshRec))
	testkit.Eventually(t, "the new key is in force", found(s, fresh))
	if _, ok := s.Lookup(old); !ok {
		t.Error("old key lost")
	}
	// The new keys are in force a moment before the watcher logs the
	// reload: the line is awaited, not read at once.
	testkit.Eventually(t, "the reload is logged", func() bool {
		return strings.Contains(buf.String(), `msg="keys reloaded" file=`+path+` count=2`)
	})
}

func TestWatchPicksUpRenameReplace(t *testing.T) {
	old, oldRec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeTest, nil)
	path := keyFile(t, oldRec)
	s, _, _ := watching(t, path)

	tmp := filepath.Join(filepath.Dir(path), ".keys.json.tmp")
	writeFile(t, tmp, marshalFile(t, freshRec))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the new key is in force", found(s, fresh))
	if _, ok := s.Lookup(old); ok {
		t.Error("replaced key still in force")
	}

	// The watch survives the swap: a second replacement is seen too.
	writeFile(t, tmp, marshalFile(t, oldRec))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the old key is back", found(s, old))
}

// TestWatchPicksUpSymlinkSwap follows the way Kubernetes updates a mounted
// ConfigMap or Secret: keys.json -> ..data/keys.json, and ..data, a symlink
// to a timestamped directory, is replaced by renaming a new symlink over it.
func TestWatchPicksUpSymlinkSwap(t *testing.T) {
	_, oldRec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	dir := t.TempDir()
	version := func(name string, data []byte) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name, "keys.json"), data)
	}
	version("..v1", marshalFile(t, oldRec))
	must(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	must(t, os.Symlink("..data/keys.json", filepath.Join(dir, "keys.json")))
	s, _, _ := watching(t, filepath.Join(dir, "keys.json"))

	version("..v2", marshalFile(t, freshRec))
	must(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	must(t, os.RemoveAll(filepath.Join(dir, "..v1")))
	testkit.Eventually(t, "the new key is in force", found(s, fresh))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWatchBadFileKeepsKeys: a bad file seen by Watch is rejected and
// logged once; the old keys serve on; fixing the file loads it.
func TestWatchBadFileKeepsKeys(t *testing.T) {
	old, oldRec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	path := keyFile(t, oldRec)
	s, buf, reloads := watching(t, path)

	writeFile(t, path, []byte(`{"keys":[`))
	testkit.Eventually(t, "the failure is logged", func() bool { return strings.Contains(buf.String(), "keys reload failed") })
	if _, ok := s.Lookup(old); !ok {
		t.Fatal("old key lost after a bad file")
	}
	writeFile(t, path, marshalFile(t, freshRec))
	testkit.Eventually(t, "the fixed file is in force", found(s, fresh))
	// The keys are swapped in before OnReload is called.
	testkit.Eventually(t, "OnReload after the fix", func() bool { return reloads.Load() >= 2 })
	if n := strings.Count(buf.String(), "keys reload failed"); n != 1 {
		t.Errorf("failure logged %d times, want once: %s", n, buf)
	}
	if n := reloads.Load(); n != 2 {
		t.Errorf("OnReload called %d times, want 2 (failed, then good)", n)
	}
}

// TestWatchIgnoresUnchangedContent: events that leave the key file's content
// as it was (rewriting the same bytes, touching, other files) cause no reload.
func TestWatchIgnoresUnchangedContent(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	path := keyFile(t, rec)
	s, buf, reloads, looks := watchingLooks(t, path)

	writeFile(t, path, marshalFile(t, rec))
	now := time.Now()
	must(t, os.Chtimes(path, now, now))
	writeFile(t, filepath.Join(filepath.Dir(path), "other.txt"), []byte("x"))
	// The watcher looks at the file once these events have settled: that
	// look must reload nothing.
	testkit.Eventually(t, "the watcher looked after the events", func() bool { return looks.Load() > 0 })
	if n := reloads.Load(); n != 0 {
		t.Errorf("OnReload called %d times for unchanged content, want 0; log %s", n, buf)
	}
	// Then a real change: it must be the only reload.
	writeFile(t, path, marshalFile(t, freshRec))
	testkit.Eventually(t, "the new key is in force", found(s, fresh))
	// The keys are swapped in before OnReload is called.
	testkit.Eventually(t, "OnReload after the change", func() bool { return reloads.Load() >= 1 })
	if n := reloads.Load(); n != 1 {
		t.Errorf("OnReload called %d times, want 1; log %s", n, buf)
	}
}

// TestWatchStopsOnCancel: Watch returns nil soon after its context ends and
// leaves no goroutine behind (fsnotify's reader included).
func TestWatchStopsOnCancel(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	s, err := Open(keyFile(t, rec), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	s.watching = func() { close(ready) }
	var looks atomic.Int32
	s.looked = func() { looks.Add(1) }
	go func() { done <- s.Watch(ctx) }()
	<-ready
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
	goleak.VerifyNone(t)
}

func TestWatchSetupError(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	dir := filepath.Join(t.TempDir(), "d")
	must(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "keys.json")
	writeFile(t, path, marshalFile(t, rec))
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(dir))
	if err := s.Watch(context.Background()); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Watch on a vanished directory = %v, want an error naming it", err)
	}
}

// TestWatchCatchesEarlierChange: a change made after Open but before Watch
// set up its watch raised no event; Watch still loads it.
func TestWatchCatchesEarlierChange(t *testing.T) {
	_, rec := minted(t, 1, ModeLive, nil)
	fresh, freshRec := minted(t, 2, ModeLive, nil)
	path := keyFile(t, rec)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, marshalFile(t, freshRec))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	s.watching = func() { close(ready) }
	var looks atomic.Int32
	s.looked = func() { looks.Add(1) }
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx) }()
	<-ready
	if _, ok := s.Lookup(fresh); !ok {
		t.Error("change made before Watch started was not loaded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
