package redisconn

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Form is how the fleet reaches its Redis (docs/contract.md section 16). A fixed set:
// /fleet shows it.
type Form string

const (
	FormNone     Form = ""         // no Redis: everything in-process
	FormPrimary  Form = "primary"  // one primary: EDGE_REDIS_URL
	FormSentinel Form = "sentinel" // a Sentinel-managed primary: EDGE_REDIS_SENTINELS + EDGE_REDIS_MASTER
	FormCluster  Form = "cluster"  // a Redis Cluster: EDGE_REDIS_CLUSTER
)

// maxNodes bounds the host lists of EDGE_REDIS_SENTINELS and
// EDGE_REDIS_CLUSTER: a seed list, not an inventory.
const maxNodes = 64

// Settings are the EDGE_REDIS_* settings as the operator wrote them, each
// field the setting of its name (docs/operations.md). The zero value names
// no Redis. Error messages name the settings and never show a password.
type Settings struct {
	URL, Sentinels, Master, SentinelPassword, Cluster string
	Username, Password                                string
	TLS                                               bool
	CAFile, CertFile, KeyFile                         string // operator files (docs/contract.md section 15)
	// ReadFile reads CAFile, CertFile and KeyFile: cmd/edge passes
	// edge/listener.ReadTLSFile (bounded, never blocking), injected because
	// upstream may not import edge. Required when any is set: nil is an
	// error, never an unbounded read.
	ReadFile func(path string) ([]byte, error)
}

// Form is the form the settings name (FormNone when none; Check says
// whether they name exactly one).
func (s Settings) Form() Form {
	switch {
	case s.URL != "":
		return FormPrimary
	case s.Sentinels != "" || s.Master != "":
		return FormSentinel
	case s.Cluster != "":
		return FormCluster
	}
	return FormNone
}

// Configured reports whether any setting names a Redis.
func (s Settings) Configured() bool { return s.Form() != FormNone }

// Check returns every rule of docs/contract.md section 16 the settings
// break, each error naming the settings. It reads no file (Config does).
func (s Settings) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var forms []string
	if s.URL != "" {
		forms = append(forms, "EDGE_REDIS_URL")
	}
	if s.Sentinels != "" || s.Master != "" {
		forms = append(forms, "EDGE_REDIS_SENTINELS")
	}
	if s.Cluster != "" {
		forms = append(forms, "EDGE_REDIS_CLUSTER")
	}
	if len(forms) > 1 {
		bad("%s are set together: name the fleet's Redis with exactly one of EDGE_REDIS_URL, EDGE_REDIS_SENTINELS (with EDGE_REDIS_MASTER) or EDGE_REDIS_CLUSTER", strings.Join(forms, " and "))
	}
	if !s.Configured() {
		for _, v := range []struct{ name, value string }{
			{"EDGE_REDIS_USERNAME", s.Username}, {"EDGE_REDIS_PASSWORD", s.Password},
			{"EDGE_REDIS_SENTINEL_PASSWORD", s.SentinelPassword}, {"EDGE_REDIS_CA_FILE", s.CAFile},
			{"EDGE_REDIS_CERT_FILE", s.CertFile}, {"EDGE_REDIS_KEY_FILE", s.KeyFile},
		} {
			if v.value != "" {
				bad("%s is set but no Redis is named: set EDGE_REDIS_URL, EDGE_REDIS_SENTINELS (with EDGE_REDIS_MASTER) or EDGE_REDIS_CLUSTER", v.name)
			}
		}
		if s.TLS {
			bad("EDGE_REDIS_TLS is set but no Redis is named: set EDGE_REDIS_SENTINELS (with EDGE_REDIS_MASTER) or EDGE_REDIS_CLUSTER")
		}
		return errors.Join(errs...)
	}
	if s.URL != "" {
		if err := CheckURL(s.URL); err != nil {
			bad("invalid EDGE_REDIS_URL: %w", err)
		} else if u, _ := url.Parse(s.URL); u.User != nil && (s.Username != "" || s.Password != "") {
			bad("EDGE_REDIS_URL carries credentials and EDGE_REDIS_USERNAME/EDGE_REDIS_PASSWORD are set too: give them one way")
		} else if u.Scheme == "redis" && s.TLS {
			bad("EDGE_REDIS_TLS=true with a redis:// EDGE_REDIS_URL: write rediss:// for TLS")
		}
	}
	if s.Sentinels != "" || s.Master != "" {
		if s.Sentinels == "" {
			bad("EDGE_REDIS_MASTER is set without EDGE_REDIS_SENTINELS: list the Sentinels (comma-separated host:port)")
		}
		if s.Master == "" {
			bad("EDGE_REDIS_SENTINELS is set without EDGE_REDIS_MASTER: name the primary the Sentinels monitor")
		} else if strings.ContainsAny(s.Master, " \t\r\n,") || len(s.Master) > 256 {
			bad("invalid EDGE_REDIS_MASTER %q: want the monitored primary's name (no spaces or commas)", s.Master)
		}
	} else if s.SentinelPassword != "" {
		bad("EDGE_REDIS_SENTINEL_PASSWORD is set without EDGE_REDIS_SENTINELS")
	}
	for _, l := range [][2]string{{"EDGE_REDIS_SENTINELS", s.Sentinels}, {"EDGE_REDIS_CLUSTER", s.Cluster}} {
		if _, err := hostList(l[0], l[1]); l[1] != "" && err != nil {
			errs = append(errs, err)
		}
	}
	if tlsFiles := s.CAFile != "" || s.CertFile != ""; tlsFiles && !s.TLS && !strings.HasPrefix(s.URL, "rediss://") {
		bad("EDGE_REDIS_CA_FILE and EDGE_REDIS_CERT_FILE apply to TLS: write rediss:// in EDGE_REDIS_URL, or set EDGE_REDIS_TLS=true")
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		bad("EDGE_REDIS_CERT_FILE and EDGE_REDIS_KEY_FILE must be set together")
	}
	return errors.Join(errs...)
}

// CheckURL accepts a redis:// or rediss:// URL of one host that go-redis
// can use (EDGE_REDIS_URL). The error says what is wanted and never holds
// the value (it may hold a password: a caller echoes it redacted).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return errors.New("want redis://[user:password@]host:port[/db] or rediss://")
	}
	if strings.Contains(u.Host, ",") {
		return errors.New("it names one primary, not a host list: for several nodes use EDGE_REDIS_SENTINELS with EDGE_REDIS_MASTER, or EDGE_REDIS_CLUSTER")
	}
	if _, err := redis.ParseURL(raw); err != nil {
		return errors.New("want redis://[user:password@]host:port[/db] or rediss://")
	}
	return nil
}

// hostList splits a comma-separated host:port list (spaces around items
// allowed; empty items, a missing port or more than maxNodes refused).
func hostList(name, raw string) ([]string, error) {
	parts := strings.Split(raw, ",")
	if len(parts) > maxNodes {
		return nil, fmt.Errorf("invalid %s: %d hosts; at most %d", name, len(parts), maxNodes)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		host, port, err := net.SplitHostPort(p)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid %s item %q: want comma-separated host:port", name, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Describe is the Redis the settings name, for logs and /fleet: the form
// and its addresses, never a credential.
func (s Settings) Describe() string {
	switch s.Form() {
	case FormPrimary:
		u, err := url.Parse(s.URL)
		if err != nil {
			return "primary (unparsable URL)"
		}
		return "primary " + u.Scheme + "://" + u.Host + u.Path
	case FormSentinel:
		return "sentinel master " + s.Master + " via " + s.Sentinels
	case FormCluster:
		return "cluster seeds " + s.Cluster
	}
	return "none"
}

// Config returns the client configuration of the settings: Check's rules,
// then the operator files read (CA bundle, client certificate) into the
// TLS configuration. Guard, pool and telemetry are left for the caller.
func (s Settings) Config() (Config, error) {
	if err := s.Check(); err != nil {
		return Config{}, err
	}
	cfg := Config{URL: s.URL, Master: s.Master, SentinelPassword: s.SentinelPassword,
		Username: s.Username, Password: s.Password, TLS: s.TLS}
	cfg.Sentinels, _ = hostList("", s.Sentinels) // Check has refused a bad list; none is nil
	cfg.Cluster, _ = hostList("", s.Cluster)
	var err error
	if cfg.TLSConfig, err = LoadTLS(s.ReadFile, s.CAFile, s.CertFile, s.KeyFile); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// LoadTLS reads the CA bundle and the client certificate with read and
// returns the TLS configuration that trusts exactly those CAs (none: the
// system store) and presents that certificate; all empty: nil. The
// process's system store and SSL_CERT_FILE are never touched.
func LoadTLS(read func(string) ([]byte, error), caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if read == nil {
		return nil, errors.New("EDGE_REDIS_CA_FILE, EDGE_REDIS_CERT_FILE, EDGE_REDIS_KEY_FILE: no operator-file reader to read them with")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := read(caFile)
		if err != nil {
			return nil, fmt.Errorf("EDGE_REDIS_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("EDGE_REDIS_CA_FILE: no PEM certificate in the file")
		}
		tc.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		certPEM, err := read(certFile)
		if err != nil {
			return nil, fmt.Errorf("EDGE_REDIS_CERT_FILE: %w", err)
		}
		keyPEM, err := read(keyFile)
		if err != nil {
			return nil, fmt.Errorf("EDGE_REDIS_KEY_FILE: %w", err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, errors.New("EDGE_REDIS_CERT_FILE/EDGE_REDIS_KEY_FILE: not a matching PEM certificate and key")
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// IsTLSTrust reports whether err is a failure to trust the Redis server's
// certificate (a wrong EDGE_REDIS_CA_FILE, or a private CA without it).
func IsTLSTrust(err error) bool {
	var ua x509.UnknownAuthorityError
	var cv *tls.CertificateVerificationError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ua) || errors.As(err, &cv) || errors.As(err, &hn) || errors.As(err, &ci)
}

// Variable is the setting that names s's Redis: EDGE_REDIS_SENTINELS,
// EDGE_REDIS_CLUSTER or EDGE_REDIS_URL, for messages.
func (s Settings) Variable() string {
	return cmp.Or(map[Form]string{FormSentinel: "EDGE_REDIS_SENTINELS", FormCluster: "EDGE_REDIS_CLUSTER"}[s.Form()], "EDGE_REDIS_URL")
}
