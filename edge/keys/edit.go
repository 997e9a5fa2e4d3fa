package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// DefaultOverlap is how long a rotated key keeps working beside its
// successor unless told otherwise (docs/contract.md section 18).
const DefaultOverlap = 24 * time.Hour

// Editor changes one key file on behalf of `edge keys` (docs/contract.md
// section 18; docs/operations.md, "Managing keys"): each change reads, edits,
// checks with Parse and atomically rewrites the whole file under a lock on
// FILE.lock, keeping its mode, owner and group (a new file: mode 0600). A key
// file that is a symbolic link is resolved: its target is rewritten.
type Editor struct {
	// Path is the key file. Required.
	Path string
	// Now is the clock for expiries ("--expires 720h", rotation overlaps). Required.
	Now func() time.Time
	// Random is the randomness keys are minted from (crypto/rand.Reader). Required.
	Random io.Reader
}

// NewKey is what Add mints: the grants of the new record.
type NewKey struct {
	Partner string
	Brand   string // required
	Mode    Mode   // ModeLive or ModeTest; the key's prefix follows it
	// Properties are property ids; nil or empty: every property (["*"]).
	Properties []string
	// Scopes nil: properties:read only (as Mint). A non-nil empty list
	// grants no scope.
	Scopes []string
	// ExpiresAt nil: the key does not expire.
	ExpiresAt *time.Time
	// RateLimit nil: the deployment's default quota.
	RateLimit *RateLimit
	// ClientID empty: no OAuth 2.0 client acts as the record.
	ClientID string
}

// Entry is a record as `edge keys list` shows it: every field but the
// digest, which is never shown.
type Entry struct {
	ID         string     `json:"id"`
	Partner    string     `json:"partner"`
	Brand      string     `json:"brand"`
	Mode       Mode       `json:"mode"`
	Properties []string   `json:"properties"`
	Status     string     `json:"status"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	// Expired tells whether ExpiresAt has passed (by the Editor's clock).
	Expired bool `json:"expired"`
	// Scopes nil: every scope (the record has no scopes field).
	Scopes    []string   `json:"scopes,omitzero"`
	RateLimit *RateLimit `json:"rateLimit,omitzero"`
	ClientID  string     `json:"clientId,omitzero"`
	// APIKey tells whether the record has an API key (a sha256); false for
	// a record of OAuth 2.0 tokens only.
	APIKey bool `json:"apiKey"`
}

// Add mints a key with the grants of k, adds its record to the file
// (creating the file when it does not exist) and returns the key, which is
// shown once and stored nowhere, and the record.
func (e Editor) Add(k NewKey) (token string, rec Record, err error) {
	token, rec, err = Mint(e.Random, k.Brand, k.Mode, k.Properties)
	if err != nil {
		return "", Record{}, err
	}
	if k.Scopes != nil {
		rec.Scopes = k.Scopes
	}
	if k.ExpiresAt != nil {
		if !k.ExpiresAt.After(e.Now()) {
			return "", Record{}, errors.New("the expiry is not in the future")
		}
		t := k.ExpiresAt.UTC()
		rec.ExpiresAt = &t
	}
	if k.ClientID != "" && !validClientID(k.ClientID) {
		return "", Record{}, fmt.Errorf("the client id must be 1 to %d printable ASCII characters without spaces", maxClientID)
	}
	rec.Partner, rec.RateLimit, rec.ClientID = k.Partner, k.RateLimit, k.ClientID
	if err = e.edit(true, func(recs []Record) ([]Record, error) { return append(recs, rec), nil }); err != nil {
		return "", Record{}, err
	}
	return token, rec, nil
}

// List returns the file's records without their digests, in file order.
// A file the edge would refuse for its mode or its directory's (checkPerm)
// is refused here too: a listing that looks fine would hide that the edge
// does not start with it.
func (e Editor) List() ([]Entry, error) {
	path, err := e.target()
	if err != nil {
		return nil, err
	}
	if _, err := checkPerm(e.Path); err != nil {
		return nil, fmt.Errorf("%w (the edge refuses it; fix the mode, then list)", err)
	}
	recs, err := load(path, false)
	if err != nil {
		return nil, err
	}
	now := e.Now()
	out := make([]Entry, 0, len(recs))
	for _, r := range recs {
		out = append(out, Entry{
			ID: r.ID, Partner: r.Partner, Brand: r.Brand, Mode: r.Mode,
			Properties: r.Properties, Status: r.Status, ExpiresAt: r.ExpiresAt,
			Expired: r.ExpiresAt != nil && !now.Before(*r.ExpiresAt),
			Scopes:  r.Scopes, RateLimit: r.RateLimit, ClientID: r.ClientID,
			APIKey: r.SHA256 != "",
		})
	}
	return out, nil
}

// SetStatus sets the status of record id: StatusSuspended (the key is
// refused with 403 API_KEY_SUSPENDED) or StatusActive.
func (e Editor) SetStatus(id, status string) error {
	if status != StatusActive && status != StatusSuspended {
		return fmt.Errorf("status must be %q or %q", StatusActive, StatusSuspended)
	}
	return e.edit(false, func(recs []Record) ([]Record, error) {
		i, err := find(recs, id)
		if err != nil {
			return nil, err
		}
		recs[i].Status = status
		return recs, nil
	})
}

// Revoke removes record id from the file: its key is unknown from then on
// (401 API_KEY_INVALID).
func (e Editor) Revoke(id string) error {
	return e.edit(false, func(recs []Record) ([]Record, error) {
		i, err := find(recs, id)
		if err != nil {
			return nil, err
		}
		return append(recs[:i], recs[i+1:]...), nil
	})
}

// Rotate mints a successor of record id with the same grants, hands it the
// clientId (only one record may hold it) and returns its key and record. The
// old record's expiresAt becomes now + overlap, unless it was earlier. A
// record of OAuth 2.0 tokens only has no API key to rotate. A record that
// already has a successor (successor) is refused unless force: rotating it
// again would leave two live successors (docs/contract.md section 22).
func (e Editor) Rotate(id string, overlap time.Duration, force bool) (token string, rec Record, err error) {
	if overlap < 0 {
		return "", Record{}, errors.New("the overlap must not be negative")
	}
	err = e.edit(false, func(recs []Record) ([]Record, error) {
		i, err := find(recs, id)
		if err != nil {
			return nil, err
		}
		old := &recs[i]
		if old.SHA256 == "" {
			return nil, fmt.Errorf("%s has no API key to rotate (a record of OAuth 2.0 tokens only)", id)
		}
		if old.ExpiresAt != nil && !e.Now().Before(*old.ExpiresAt) {
			return nil, fmt.Errorf("%s has expired: its successor would be born expired; add a new key instead", id)
		}
		if j := successor(recs, i); j >= 0 && !force {
			return nil, fmt.Errorf("%s already has a successor, %s (its grants, after it in the file, outliving it): a second rotation would leave two live successors; rotate %[2]s instead, revoke %[2]s first, or pass --force", id, recs[j].ID)
		}
		token, rec, err = Mint(e.Random, old.Brand, old.Mode, old.Properties)
		if err != nil {
			return nil, err
		}
		rec.Partner, rec.Status, rec.Scopes = old.Partner, old.Status, old.Scopes
		rec.RateLimit, rec.ClientID, rec.ExpiresAt = old.RateLimit, old.ClientID, old.ExpiresAt
		old.ClientID = ""
		end := e.Now().Add(overlap).UTC()
		if old.ExpiresAt == nil || end.Before(*old.ExpiresAt) {
			old.ExpiresAt = &end
		}
		return append(recs, rec), nil
	})
	if err != nil {
		return "", Record{}, err
	}
	return token, rec, nil
}

// successor is the index of the record that looks like what Rotate made of
// recs[i], or -1: a record after it with its brand, mode, partner,
// properties, scopes and rate limit, expiring no sooner than it, while
// recs[i] has an expiry (Rotate gave it one) and no clientId (Rotate
// handed it on). The file keeps no link between the two (its format is
// the edge's, docs/operations.md), so a key added by hand with the same
// grants after an expiring one counts too: --force is the way past.
func successor(recs []Record, i int) int {
	old := recs[i]
	if old.ExpiresAt == nil || old.ClientID != "" {
		return -1
	}
	for j := i + 1; j < len(recs); j++ {
		r := recs[j]
		if r.Brand == old.Brand && r.Mode == old.Mode && r.Partner == old.Partner && r.SHA256 != "" &&
			slices.Equal(r.Properties, old.Properties) && slices.Equal(r.Scopes, old.Scopes) && (r.Scopes == nil) == (old.Scopes == nil) &&
			(r.RateLimit == nil) == (old.RateLimit == nil) && (r.RateLimit == nil || *r.RateLimit == *old.RateLimit) &&
			(r.ExpiresAt == nil || !r.ExpiresAt.Before(*old.ExpiresAt)) {
			return j
		}
	}
	return -1
}

// Summary describes a key file that loads.
type Summary struct {
	Keys, Suspended, Expired int
}

// Check loads the key file at path exactly as the edge does at start-up and
// on reload (Open), and reports what it holds at now, or the reason it would
// not load.
func Check(path string, now time.Time) (Summary, error) {
	s, err := Open(path, Options{})
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Keys: s.Len()}
	sum.Suspended, sum.Expired = s.keys().counts(now)
	return sum, nil
}

// ParseExpiry reads an expiry as `edge keys add --expires` takes it: an
// RFC 3339 time, or a Go duration (720h) counted from now. Either must lie
// in the future.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, errors.New("a duration must be positive")
		}
		return now.Add(d).UTC().Truncate(time.Second), nil // whole seconds read better in the file
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errors.New("must be an RFC 3339 time (2027-01-31T00:00:00Z) or a duration (720h)")
	}
	if !t.After(now) {
		return time.Time{}, errors.New("is not in the future")
	}
	return t.UTC(), nil
}

// find returns the index of record id.
func find(recs []Record, id string) (int, error) {
	if !idPattern.MatchString(id) {
		return 0, fmt.Errorf("%q is not a key id (key_ followed by letters and digits)", clip(id))
	}
	for i, r := range recs {
		if r.ID == id {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no record with id %s", id)
}

// target is the file to edit: Path, its symbolic links resolved.
func (e Editor) target() (string, error) {
	if e.Path == "" {
		return "", errors.New("no key file given (EDGE_KEYS_FILE or --file)")
	}
	if real, err := filepath.EvalSymlinks(e.Path); err == nil {
		return real, nil
	}
	return e.Path, nil // does not exist (yet): errors come from reading it
}

// edit applies change to the file's records under the lock, refuses a
// result that would not load, and writes it atomically. create lets a
// missing file start empty.
func (e Editor) edit(create bool, change func([]Record) ([]Record, error)) error {
	path, err := e.target()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("key file %s: its directory does not exist", path)
	}
	unlock, err := lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	shareLock(path+".lock", path)
	if _, err := checkPerm(path); err != nil {
		return fmt.Errorf("%w (the edge refuses it; fix the mode, then edit)", err)
	}
	recs, err := load(path, create)
	if err != nil {
		return err
	}
	if recs, err = change(recs); err != nil {
		return err
	}
	data, err := render(recs)
	if err != nil {
		return err
	}
	if _, err := Parse(data); err != nil {
		return fmt.Errorf("refused, the edited key file would not load (left unchanged): %w", err)
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("refused, the edited key file would be larger than %d bytes (left unchanged)", maxFileSize)
	}
	return writeAtomic(path, data)
}

// load reads and parses the key file as the edge does. A file that does
// not load now is not edited: the edit could not tell what it would keep.
func load(path string, create bool) ([]Record, error) {
	data, err := readFile(path)
	if create && errors.Is(err, errNoFile) {
		return []Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	recs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("key file %s does not load (fix it first; edge keys check shows why): %w", path, err)
	}
	return recs, nil
}

// render is the key file of recs: indented JSON, one trailing newline.
func render(recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(File{Keys: recs}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lock takes an exclusive flock on path (mode 0600 when created) and returns
// its release; the kernel releases it if the editor is killed. O_NOFOLLOW: a
// lock file that is a symbolic link is refused, never followed (docs/contract.md section 21).
// A lock file with more than one link is refused too (docs/contract.md
// section 22): a hard link is another name of some file (/etc/shadow, made
// by whoever could write the directory), which shareLock would give to the
// key file's owner. One fstat of the open lock, after O_NOFOLLOW.
func lock(path string) (func(), error) {
	fl := flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW), flock.SetPermissions(0o600))
	if err := fl.Lock(); err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("lock file %s is a symbolic link: refused (remove it; edge keys creates the lock file itself)", path)
		}
		return nil, fmt.Errorf("lock file %s: %w", path, describeFSError(err))
	}
	fi, err := fl.Stat() // of the open descriptor: the file locked, not the name
	if err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("lock file %s: %w", path, describeFSError(err))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		_ = fl.Unlock()
		return nil, fmt.Errorf("lock file %s has %d links (another name of it is elsewhere): refused (remove it; edge keys creates the lock file itself)", path, st.Nlink)
	}
	return func() { _ = fl.Unlock() }, nil
}

// writeAtomic replaces path by a file holding data with renameio (a synced
// temporary file in the same directory, renamed over path), then syncs the
// directory so that the rename survives a crash. The old file's mode, owner
// and group are kept (docs/contract.md section 21: root's edit must leave a
// file the edge's user can read); an owner that cannot be kept refuses the write.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := renameio.NewPendingFile(path, renameio.WithTempDir(dir),
		renameio.WithStaticPermissions(0o600), renameio.WithExistingPermissions())
	if err != nil {
		return fmt.Errorf("write key file: %w", describeFSError(err))
	}
	defer func() {
		_ = tmp.Cleanup() // after CloseAtomicallyReplace, nothing to do
		if err != nil {
			err = fmt.Errorf("write key file %s: %w (left unchanged)", path, err)
		}
	}()
	if err = keepOwner(tmp.File, path); err != nil {
		return err
	}
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.CloseAtomicallyReplace(); err != nil {
		return err
	}
	// Renamed: the change is made; a failure below leaves only its durability unconfirmed.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// shareLock gives the lock file the key file's owner and group, best
// effort (Lchown: the lock is no link, lock saw to that): a lock file left
// by root would otherwise shut out the edge's own user from the next edit.
func shareLock(lockPath, path string) {
	if fi, err := os.Stat(path); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			_ = os.Lchown(lockPath, int(st.Uid), int(st.Gid))
		}
	}
}

// keepOwner gives f the owner and group of the file at path, when it
// exists and they differ from f's.
func keepOwner(f *os.File, path string) error {
	old, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	was, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owners on this system
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if now, ok := fi.Sys().(*syscall.Stat_t); ok && now.Uid == was.Uid && now.Gid == was.Gid {
		return nil
	}
	if err := f.Chown(int(was.Uid), int(was.Gid)); err != nil {
		return fmt.Errorf("cannot keep the key file's owner %d:%d: %w", was.Uid, was.Gid, err)
	}
	return nil
}

// SplitList splits a comma-separated flag value, trimming spaces and
// dropping empty entries; never nil.
func SplitList(s string) []string {
	out := []string{}
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
