package listener

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/edge/internal/opfile"
)

// certStore holds the serving certificate and replaces it when its files
// change (watch) or when asked (SIGHUP). A new pair that fails to load,
// whose key does not match, or that is not valid now, is rejected and
// logged, naming the refused file (tlsRefusal); the certificate in use
// stays.
type certStore struct {
	certFile, keyFile string
	log               *slog.Logger

	cur atomic.Pointer[tls.Certificate]

	mu        sync.Mutex // serialises loads; guards lastCert, lastKey
	lastCert  []byte     // file contents last loaded or rejected
	lastKey   []byte
	onApplied func()        // test hook: called after each load attempt; nil: none
	settle    time.Duration // test hook: the watch's settling delay; zero: dirwatch's default
	onReload  func(ok bool) // ServeConfig.OnTLSReload; nil: none
}

// newCertStore loads cfg's pair once; an error here stops start-up.
func newCertStore(cfg ServeConfig) (*certStore, error) {
	c := &certStore{certFile: cfg.TLSCertFile, keyFile: cfg.TLSKeyFile, log: cfg.Logger,
		settle: cfg.tlsSettle, onReload: cfg.OnTLSReload}
	if err := c.reload(true); err != nil {
		return nil, err
	}
	c.onApplied = cfg.onTLSLoad // the loads after this first one
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
	// Bounded, regular files only, never blocking (docs/contract.md section 15): a link
	// to /dev/zero or a FIFO is refused like a malformed file.
	certPEM, err := opfile.Read(c.certFile, opfile.MaxTLSFile)
	if err != nil {
		return c.reject(&tlsRefusal{what: refusedCert, file: c.certFile, err: err})
	}
	keyPEM, err := opfile.Read(c.keyFile, opfile.MaxTLSFile)
	if err != nil {
		return c.reject(&tlsRefusal{what: refusedKey, file: c.keyFile, err: err})
	}
	if !force && bytes.Equal(certPEM, c.lastCert) && bytes.Equal(keyPEM, c.lastKey) {
		return nil
	}
	c.lastCert, c.lastKey = certPEM, keyPEM
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return c.reject(c.diagnose(certPEM, keyPEM, err))
	}
	leaf := cert.Leaf // set by X509KeyPair
	if now := time.Now(); leaf == nil || now.After(leaf.NotAfter) || now.Before(leaf.NotBefore) {
		return c.reject(&tlsRefusal{what: refusedCert, file: c.certFile, err: errors.New("not valid now")})
	}
	if c.cur.Swap(&cert) != nil { // a reload, not the first load
		if c.onReload != nil {
			c.onReload(true)
		}
		c.log.Info("TLS certificate reloaded", "file", c.certFile, "subject", leaf.Subject.String(),
			"not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

func (c *certStore) reject(r *tlsRefusal) error {
	if c.cur.Load() != nil {
		if c.onReload != nil {
			c.onReload(false)
		}
		attrs := []any{"refused", r.what, "file", r.file}
		if r.what == refusedPair {
			attrs = append(attrs, "key_file", r.keyFile)
		}
		c.log.Error("TLS certificate reload failed; the previous certificate stays in use", append(attrs, "error", r.Error())...)
	}
	return r
}

// What a refused load refused (docs/contract.md section 17: the log says
// whether the certificate or the key was refused, and names the file).
const (
	refusedCert = "certificate" // the certificate file: unreadable, no certificate, or not valid now
	refusedKey  = "key"         // the key file: unreadable or no private key
	refusedPair = "pair"        // each file is good alone, but the key is not the certificate's
)

// tlsRefusal is why a certificate load was refused: what (refusedCert,
// refusedKey or refusedPair) and the file; keyFile is set for a pair.
type tlsRefusal struct {
	what, file, keyFile string
	err                 error
}

func (r *tlsRefusal) Error() string {
	switch r.what {
	case refusedCert:
		return fmt.Sprintf("TLS certificate file %s refused: %v", r.file, r.err)
	case refusedKey:
		return fmt.Sprintf("TLS key file %s refused: %v", r.file, r.err)
	}
	return fmt.Sprintf("TLS certificate file %s and key file %s refused together: %v", r.file, r.keyFile, r.err)
}

func (r *tlsRefusal) Unwrap() error { return r.err }

// diagnose says which file made tls.X509KeyPair fail (err): the
// certificate when its first certificate block is missing or does not
// parse, else the key when no private key block parses, else the pair.
func (c *certStore) diagnose(certPEM, keyPEM []byte, err error) *tlsRefusal {
	if certErr := firstCertificate(certPEM); certErr != nil {
		return &tlsRefusal{what: refusedCert, file: c.certFile, err: certErr}
	}
	if keyErr := firstPrivateKey(keyPEM); keyErr != nil {
		return &tlsRefusal{what: refusedKey, file: c.keyFile, err: keyErr}
	}
	return &tlsRefusal{what: refusedPair, file: c.certFile, keyFile: c.keyFile, err: err}
}

// firstCertificate checks the first CERTIFICATE block of a PEM file, the
// one tls.X509KeyPair makes the leaf.
func firstCertificate(data []byte) error {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return errors.New("no CERTIFICATE PEM block")
		}
		if b.Type == "CERTIFICATE" {
			_, err := x509.ParseCertificate(b.Bytes)
			return err
		}
	}
}

// firstPrivateKey checks the first private key block of a PEM file, in the
// encodings tls.X509KeyPair accepts (PKCS #1, PKCS #8, SEC 1).
func firstPrivateKey(data []byte) error {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return errors.New("no PRIVATE KEY PEM block")
		}
		if b.Type != "PRIVATE KEY" && !strings.HasSuffix(b.Type, " PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return nil
		}
		_, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		return err
	}
}

// ReadTLSFile reads TLS material an operator points the edge at (a
// certificate, a key, a CA bundle) as the listener reads its own
// (docs/contract.md section 15); cmd/edge hands it to the Redis TLS settings.
func ReadTLSFile(path string) ([]byte, error) { return opfile.Read(path, opfile.MaxTLSFile) }
