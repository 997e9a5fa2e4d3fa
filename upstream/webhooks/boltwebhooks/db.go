// Package boltwebhooks keeps a single edge's webhook endpoints and their
// progress in EDGE_DATA_DIR (docs/webhooks.md, "Where endpoints and
// progress live"), so that they outlive a restart: a webhooks.Registry in
// its own bbolt file, each change one transaction, or for progress one
// shared with other endpoints' (a crash loses at most the changes being
// written; delivery then resumes after the last recorded event, sending
// the one in flight again).
package boltwebhooks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// FileName is the endpoints' file in the data directory. It is a file of
// its own rather than a bucket in the events feed's (boltevents): bbolt
// locks a file for one process and one *bolt.DB, so sharing it would
// mean handing the feed's handle across packages and closing both
// together; two files keep the feed and the endpoints apart (either can
// be removed, or its format changed, without the other), at the cost of
// one more lock on a directory that is one edge's anyway.
const FileName = "webhooks.db"

// openTimeout is how long Open waits for another process's lock on the
// file: two edges never share a data directory.
const openTimeout = 2 * time.Second

// progressDelay is how long the progress endpoints record at once waits
// for more to share its commit (SetProgress): bbolt's Batch delay, its
// default. An endpoint's next event is sent once its progress is on disk,
// so this adds to the time an event takes while others deliver too (a
// receiver's round trip is most of it beyond loopback); in exchange the
// deliveries of a walk's events, which go to every endpoint at once,
// commit in a few transactions rather than one each.
const progressDelay = 10 * time.Millisecond

// bucket holds the endpoints, keyed by id (codec.go).
var bucket = []byte("endpoints")

// Open opens, or creates, the endpoints' file in dir, readable and
// writable by the edge's user alone. dir must exist: the edge checks it
// (boltevents.CheckDir) before it opens anything in it.
func Open(dir string) (*Store, error) {
	path := filepath.Join(dir, FileName)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked by another process: one edge per data directory", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// The file holds endpoints' secrets: the edge's alone, even when made
	// wider by hand.
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("%s is readable by others (%s) and cannot be made private: %w", path, st.Mode().Perm(), err)
		}
	}
	db.MaxBatchDelay = progressDelay
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	}); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Close closes the file; a transaction under way finishes first.
func (s *Store) Close() error { return s.db.Close() }
