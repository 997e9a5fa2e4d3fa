package keys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/opfile"
)

// maxFileSize bounds how much of a key file is read (docs/contract.md section 15).
const maxFileSize = opfile.MaxKeyFile

// Options configures a Store. The zero value is usable.
type Options struct {
	// Logger receives "keys loaded", "keys reloaded" and "keys reload
	// failed" records. It never receives a key or a digest. nil: discard.
	Logger *slog.Logger
	// OnReload, when set, is called after every reload attempt (Reload, or a
	// change seen by Watch) with whether it succeeded; meant for metrics. It
	// is not called for the initial load in Open. nil: none.
	OnReload func(ok bool)
}

// Store holds the keys of one key file. Lookup is lock-free and safe for
// concurrent use with Reload and Watch: a reload builds a new immutable set
// and swaps it in whole.
type Store struct {
	path     string
	log      *slog.Logger
	onReload func(bool)

	set atomic.Pointer[keySet]

	mu      sync.Mutex // serialises loads
	lastSum [sha256.Size]byte

	// watching, when set (tests only), is called once Watch has set up its
	// watch and looked at the file: changes after that raise events.
	watching func()
	// looked, when set (tests only), is called by Watch after each look at
	// the file that a change led to, reload or not.
	looked func()
}

// keySet is one loaded key file; never modified once published.
type keySet struct {
	byDigest map[[sha256.Size]byte]*Key
	byClient map[string]*Key // records with a clientId (docs/contract.md section 12)
	all      []*Key          // every record, in file order
	byID     map[string]*Key
	next     map[string]string // a rotated record's id: its successor's (holder.go)
}

// counts returns how many of the set's keys are suspended and expired at now.
func (set *keySet) counts(now time.Time) (suspended, expired int) {
	for _, k := range set.all {
		if k.Suspended {
			suspended++
		}
		if k.Expired(now) {
			expired++
		}
	}
	return suspended, expired
}

// Open loads the key file at path. An error means the edge must not start;
// it names the file and every problem found (never a key or a digest). A
// file with no keys opens, but the store is not Usable. A file or directory
// writable by group or others is refused, one readable by others is loaded
// with a warning (checkPerm); reloads refuse the same.
func Open(path string, opts Options) (*Store, error) {
	s := &Store{path: path, log: opts.Logger, onReload: opts.OnReload}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	warning, err := checkPerm(path)
	if err != nil {
		return nil, err
	}
	if warning != "" {
		s.log.Warn(warning, "file", path)
	}
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	set, err := build(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	s.lastSum = sha256.Sum256(data)
	s.set.Store(set)
	s.logLoaded("keys loaded", set)
	return s, nil
}

// Lookup returns the key whose digest is that of token. It reports false when
// token is not of the key format, is unknown, or its prefix disagrees with
// the record's mode (a svc_test_ key on a live record, or the reverse).
// The caller decides what expiry, suspension, brand and scopes mean.
func (s *Store) Lookup(token string) (*Key, bool) {
	mode, ok := modeOf(token)
	if !ok {
		return nil, false
	}
	k, ok := s.keys().byDigest[digestBounded(token)] // modeOf bounded its length
	if !ok || k.Mode != mode {
		return nil, false
	}
	return k, true
}

// LookupClient returns the record whose clientId is clientID: the principal
// an OAuth 2.0 access token of that client acts as. The caller decides what
// expiry, suspension, brand and scopes mean, as for Lookup.
func (s *Store) LookupClient(clientID string) (*Key, bool) {
	k, ok := s.keys().byClient[clientID]
	return k, ok
}

// Usable reports whether the store holds at least one key. An edge without
// usable keys cannot serve and reports itself unhealthy.
func (s *Store) Usable() bool { return s.Len() > 0 }

// Brands returns the brands of the keys in force, sorted, each once.
func (s *Store) Brands() []string {
	var brands []string
	for _, k := range s.keys().all {
		brands = append(brands, k.Brand)
	}
	slices.Sort(brands)
	return slices.Compact(brands)
}

// Len returns the number of keys in force.
func (s *Store) Len() int { return len(s.keys().all) }

// keys returns the set in force; an empty one for a Store not made by Open.
func (s *Store) keys() *keySet {
	if set := s.set.Load(); set != nil {
		return set
	}
	return &noKeys
}

var noKeys keySet

// Path returns the key file's path.
func (s *Store) Path() string { return s.path }

// Reload re-reads the key file and puts its keys in force. On any failure the
// keys already in force stay, the failure is logged ("keys reload failed",
// with the reason) and returned. The run loop calls it on SIGHUP.
func (s *Store) Reload() error { return s.reload(true) }

// reload loads the file; unless force, only when its content changed since
// the last attempt.
func (s *Store) reload(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := checkPerm(s.path); err != nil {
		return s.reloadFailed(err)
	}
	data, err := readFile(s.path)
	sum := sha256.Sum256(data)
	if err == nil && !force && sum == s.lastSum {
		return nil
	}
	if err == nil {
		s.lastSum = sum // a bad content is reported once, not per event
		var set *keySet
		if set, err = build(data); err == nil {
			s.set.Store(set)
			s.logLoaded("keys reloaded", set)
		}
	}
	if err != nil {
		return s.reloadFailed(err)
	}
	if s.onReload != nil {
		s.onReload(true)
	}
	return nil
}

// reloadFailed logs and reports a reload refused for err; the keys in
// force stay.
func (s *Store) reloadFailed(err error) error {
	s.log.Error("keys reload failed", "file", s.path, "reason", err.Error(), "keys", s.Len())
	if s.onReload != nil {
		s.onReload(false)
	}
	return fmt.Errorf("key file %s: %w (previous keys stay in force)", s.path, err)
}

// errNoFile is readFile's error for a key file that does not exist.
var errNoFile = errors.New("file does not exist")

// readFile reads the key file: a regular file only (links followed), never
// blocking, bounded (docs/contract.md section 15). Errors keep the useful
// part of a file-system error.
func readFile(path string) ([]byte, error) {
	data, err := opfile.Read(path, maxFileSize)
	if errors.Is(err, opfile.ErrTooLarge) {
		return nil, fmt.Errorf("file is larger than %d bytes", maxFileSize)
	}
	if err != nil {
		return nil, describeFSError(err)
	}
	return data, nil
}

// describeFSError keeps the useful part of a file-system error.
func describeFSError(err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errNoFile
	case errors.Is(err, os.ErrPermission):
		return errors.New("permission denied")
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Op, pe.Err)
	}
	return err
}

func (s *Store) logLoaded(msg string, set *keySet) {
	suspended, expired := set.counts(time.Now())
	level := slog.LevelInfo
	if len(set.all) == 0 {
		level = slog.LevelWarn // the edge cannot authenticate anyone
	}
	s.log.Log(context.Background(), level, msg, "file", s.path, "count", len(set.all),
		"suspended", suspended, "expired", expired)
}

// build parses a key file's content into an immutable key set.
func build(data []byte) (*keySet, error) {
	recs, err := Parse(data)
	if err != nil {
		return nil, err
	}
	set := &keySet{byDigest: make(map[[sha256.Size]byte]*Key, len(recs)), byClient: map[string]*Key{},
		byID: make(map[string]*Key, len(recs)), next: map[string]string{}}
	for i, r := range recs {
		k := newKey(r)
		set.all = append(set.all, k)
		set.byID[r.ID] = k
		if j := successor(recs, i); j >= 0 {
			set.next[r.ID] = recs[j].ID
		}
		if r.SHA256 != "" {
			var d [sha256.Size]byte
			_, _ = hex.Decode(d[:], []byte(r.SHA256)) // Parse checked it: 64 hex digits
			set.byDigest[d] = k
		}
		if r.ClientID != "" {
			set.byClient[r.ClientID] = k
		}
	}
	return set, nil
}

// newKey builds the Key of a validated record.
func newKey(r Record) *Key {
	k := &Key{
		ID:        r.ID,
		Partner:   r.Partner,
		Brand:     r.Brand,
		Mode:      r.Mode,
		Suspended: r.Status == StatusSuspended,
		RateLimit: r.RateLimit,
		ClientID:  r.ClientID,
	}
	if r.ExpiresAt != nil {
		k.ExpiresAt = *r.ExpiresAt
	}
	if len(r.Properties) == 1 && r.Properties[0] == AllPropertiesGrant {
		k.allProperties = true
	} else {
		k.properties = make(map[string]struct{}, len(r.Properties))
		for _, p := range r.Properties {
			k.properties[p] = struct{}{}
		}
	}
	if r.Scopes != nil {
		k.scopes = make(map[string]struct{}, len(r.Scopes))
		for _, sc := range r.Scopes {
			k.scopes[sc] = struct{}{}
		}
	}
	return k
}
