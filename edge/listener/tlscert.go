package listener

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/opfile"
)

// certStore holds the serving certificate and replaces it when its files
// change (watch) or when asked (SIGHUP). A new pair that fails to load,
// whose key does not match, or that is not valid now, is rejected and
// logged; the certificate in use stays.
type certStore struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	cur atomic.Pointer[tls.Certificate]

	mu        sync.Mutex // serialises loads; guards lastCert, lastKey
	lastCert  []byte     // file contents last loaded or rejected
	lastKey   []byte
	onApplied func()        // test hook: called after each load attempt; nil: none
	settle    time.Duration // test hook: the watch's settling delay; zero: dirwatch's default
	onReload  func(ok bool) // ServeConfig.OnTLSReload; nil: none
}

// newCertStore loads the pair once; an error here stops start-up.
func newCertStore(certFile, keyFile string, log *slog.Logger, now func() time.Time) (*certStore, error) {
	c := &certStore{certFile: certFile, keyFile: keyFile, log: log, now: now}
	if err := c.reload(true); err != nil {
		return nil, err
	}
	return c, nil
}

// getCertificate is tls.Config.GetCertificate.
func (c *certStore) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// reload reads both files and, when they differ from the last ones seen
// (or force is set), installs the pair if it is good. It logs the outcome
// of every attempt after the first.
func (c *certStore) reload(force bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onApplied != nil {
		defer c.onApplied()
	}
	// Bounded, regular files only, never blocking (DECISIONS 15): a link
	// to /dev/zero or a FIFO is refused like a malformed file.
	certPEM, err1 := opfile.Read(c.certFile, opfile.MaxTLSFile)
	keyPEM, err2 := opfile.Read(c.keyFile, opfile.MaxTLSFile)
	if err := errors.Join(err1, err2); err != nil {
		return c.reject(fmt.Errorf("read TLS certificate files: %w", err))
	}
	if !force && bytes.Equal(certPEM, c.lastCert) && bytes.Equal(keyPEM, c.lastKey) {
		return nil
	}
	c.lastCert, c.lastKey = certPEM, keyPEM
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return c.reject(fmt.Errorf("TLS certificate %s with key %s: %w", c.certFile, c.keyFile, err))
	}
	leaf := cert.Leaf // set by X509KeyPair
	if now := c.now(); leaf == nil || now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return c.reject(fmt.Errorf("TLS certificate %s is not valid now", c.certFile))
	}
	first := c.cur.Load() == nil
	c.cur.Store(&cert)
	if !first {
		if c.onReload != nil {
			c.onReload(true)
		}
		c.log.Info("TLS certificate reloaded", "file", c.certFile, "subject", leaf.Subject.String(),
			"not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

func (c *certStore) reject(err error) error {
	if c.cur.Load() != nil {
		if c.onReload != nil {
			c.onReload(false)
		}
		c.log.Error("TLS certificate reload failed; the previous certificate stays in use", "error", err)
	}
	return err
}

// ReadTLSFile reads TLS material an operator points the edge at (a
// certificate, a key, a CA bundle) as the listener reads its own: a regular
// file after links, at most 1 MiB, never blocking (docs/contract.md section
// 15). cmd/edge hands it to the Redis TLS settings too, so every operator
// TLS file is read by one reader.
func ReadTLSFile(path string) ([]byte, error) { return opfile.Read(path, opfile.MaxTLSFile) }
