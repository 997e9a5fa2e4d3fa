// Package boltevents keeps a single edge's feed of property changes in
// EDGE_DATA_DIR (docs/contract.md section 25; docs/operations.md, "Property
// change events"), so that it outlives a restart: per PMS (brand and mode)
// the events of each walk, the feed's floor and last walk, the last walk's
// properties (the next walk's base) and its length, in one bbolt file.
// Each walk is one bbolt transaction: a crash (kill -9, power) at any
// moment loses at most the walk being written and never what was written
// before it. It plays for a single edge the part redisevents plays for a
// fleet (events.Shared): the feed appends each walk and reads back what
// it holds, so after a restart the cursors handed out before keep working
// and the first walk is diffed against the stored base.
package boltevents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the feed's file in the data directory.
const FileName = "events.db"

// openTimeout is how long Open waits for another process's lock on the
// file before it gives up: two edges never share one data directory.
const openTimeout = 2 * time.Second

// DB is the feed's file in a data directory; Feed gives each PMS its
// store in it. Safe for concurrent use; Close it once its stores are done.
type DB struct {
	bolt *bolt.DB
	path string
}

// Open checks dir (CheckDir) and opens, or creates, the feed's file in
// it, readable and writable by the edge's user alone.
func Open(dir string) (*DB, error) {
	if err := CheckDir(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked by another process: one edge per data directory", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// A file made by hand, or by an older build, may be wider: the feed
	// holds what partners may see, so it is the edge's alone.
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("%s is readable by others (%s) and cannot be made private: %w", path, st.Mode().Perm(), err)
		}
	}
	return &DB{bolt: db, path: path}, nil
}

// Path is the file's path.
func (d *DB) Path() string { return d.path }

// Close closes the file; a transaction under way finishes first.
func (d *DB) Close() error { return d.bolt.Close() }

// CheckDir refuses a data directory the edge cannot use: one that is not a
// directory, or that it cannot create files in. A missing one is created
// (private to the edge's user), under a parent that exists; one of the
// edge's user that others may enter is made private (a directory someone
// else owns, a volume's, is left as it is: the file is private anyway).
func CheckDir(dir string) error {
	if dir == "" {
		return errors.New("no directory given")
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return fmt.Errorf("%s does not exist and cannot be created: %w", dir, err)
		}
		st, err = os.Stat(dir)
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == os.Geteuid() && st.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(dir, 0o700) // best effort: the file itself is 0600
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("%s is not writable by the edge: %w", dir, err)
	}
	name := probe.Name()
	_ = probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("%s: cannot remove files: %w", dir, err)
	}
	return nil
}
