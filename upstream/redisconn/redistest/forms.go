package redistest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The forms operators run (docs/contract.md section 16), always real
// redis-server processes: miniredis has no TLS, Sentinel or Cluster.

// requireReal fails (CI=true) or skips t when redis-server or redis-cli is
// missing.
func requireReal(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range append([]string{"redis-server"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("redistest: %s not found on PATH (CI=true needs it): install the Debian package %s (apt-get install -y %[2]s)", tool, DebianPackage)
			}
			t.Skipf("redistest: %s not found on PATH; install the Debian package %s", tool, DebianPackage)
		}
	}
}

// proc is one redis-server process (server or Sentinel).
type proc struct {
	addr string
	cmd  *exec.Cmd
	out  bytes.Buffer  // its output, read once done is closed
	done chan struct{} // closed when cmd has exited
	once sync.Once
}

// startProc starts redis-server with args (given two free ports) and
// waits until ready (nil: PING) answers; it retries on other ports when
// one it got was taken meanwhile. The process is killed when t ends.
func startProc(t testing.TB, ready func(addr string) error, args func(port, port2 string) []string) *proc {
	t.Helper()
	var err error
	for range 5 { // a free port can be taken between probe and start
		port, port2 := freePort(t), freePort(t)
		var p *proc
		if p, err = launch("127.0.0.1:"+port, ready, args(port, port2)); err == nil {
			t.Cleanup(p.kill)
			return p
		}
	}
	t.Fatalf("redistest: %v", err)
	return nil
}

// launch starts redis-server with args and waits until ready (nil: PING)
// answers at addr; an error when it exits or is not ready within 10 s.
func launch(addr string, ready func(addr string) error, args []string) (*proc, error) {
	p := &proc{addr: addr, done: make(chan struct{})}
	p.cmd = exec.Command("redis-server", args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	if ready == nil {
		ready = func(addr string) error { _, err := Query(addr, nil, "PING"); return err }
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second) // not listening yet: no go-redis dial error logged
		if err == nil {
			c.Close()
			err = ready(addr)
		}
		if err == nil {
			return p, nil
		}
		if p.exited() {
			return nil, fmt.Errorf("redis-server on %s exited: %s", addr, strings.TrimSpace(p.out.String()))
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("redis-server on %s not ready: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the process we started, an outside event
	}
}

// freePort is a loopback TCP port free now.
func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill stops the process abruptly (SIGKILL) and waits for it.
func (p *proc) kill() {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
}

// client is a go-redis client of addr (TLS when tc is set) for tests'
// set-up and checks: RESP2, nothing sent on connect, no retries.
func client(addr string, tc *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, TLSConfig: tc, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, DialerRetries: 1, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// Query sends one command over a fresh connection (TLS when tc is set)
// and returns its reply: a simple or bulk string as is, an integer in
// decimal, an array as its elements one per line (nested arrays
// flattened); an error reply is an error. For tests' set-up and checks.
func Query(addr string, tc *tls.Config, args ...string) (string, error) {
	rdb := client(addr, tc)
	defer rdb.Close()
	cmd := make([]any, len(args))
	for i, a := range args {
		cmd[i] = a
	}
	v, err := rdb.Do(context.Background(), cmd...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", err
	}
	return strings.Join(flatten(v), "\n"), nil
}

// flatten is a reply's elements, nested arrays flattened; nil is "".
func flatten(v any) []string {
	vs, ok := v.([]any)
	if !ok {
		return []string{strings.TrimPrefix(fmt.Sprint(v), "<nil>")}
	}
	var out []string
	for _, e := range vs {
		out = append(out, flatten(e)...)
	}
	return out
}

// CA is a certificate authority made in the test, with its PEM file.
type CA struct {
	File string // the CA certificate, PEM
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// NewCA makes a CA named name; its certificate is written to dir.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	ca := &CA{File: filepath.Join(dir, name+"-ca.pem"), dir: dir}
	ca.cert, ca.key = makeCert(t, ca.File, &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil, nil)
	return ca
}

// Issue writes a certificate for name signed by the CA (a server
// certificate for 127.0.0.1 and localhost, usable by clients as well)
// and its key; it returns the two file paths.
func (ca *CA) Issue(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	certFile, keyFile = filepath.Join(ca.dir, name+".pem"), filepath.Join(ca.dir, name+"-key.pem")
	_, key := makeCert(t, certFile, &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}, ca.cert, ca.key)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

// makeCert makes a key and the certificate of tmpl for it, valid from an
// hour ago for a day, signed by parent's key (nil: self-signed), and
// writes the certificate to file.
func makeCert(t testing.TB, file string, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, file, "CERTIFICATE", der)
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

// Pool is a pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// User is an ACL user created on a server: every key and command.
type User struct{ Name, Password string }

func (u User) args() []string {
	return []string{"--user", u.Name, "on", ">" + u.Password, "~*", "&*", "+@all"}
}

// TLSOptions choose a TLS server.
type TLSOptions struct {
	ClientCerts   bool   // require a client certificate signed by the CA (false: optional)
	Users         []User // ACL users besides the default one
	NoDefaultUser bool   // the default user off: only Users may connect
}

// TLSServer is a TLS-only redis-server (--port 0) whose certificate a CA
// made in the test signed.
type TLSServer struct {
	Addr                  string // 127.0.0.1:port, TLS only
	CA                    *CA
	ClientCert, ClientKey string // files of a client certificate the CA signed
}

// StartTLS starts a TLS-only server for t, stopped when t ends.
func StartTLS(t testing.TB, opts TLSOptions) *TLSServer {
	t.Helper()
	requireReal(t)
	dir := t.TempDir()
	s := &TLSServer{CA: NewCA(t, dir, "redis-test")}
	certFile, keyFile := s.CA.Issue(t, "server")
	s.ClientCert, s.ClientKey = s.CA.Issue(t, "client")
	clientPair, err := tls.LoadX509KeyPair(s.ClientCert, s.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{RootCAs: s.CA.Pool(), Certificates: []tls.Certificate{clientPair}, MinVersion: tls.VersionTLS12}
	auth := "optional"
	if opts.ClientCerts {
		auth = "yes"
	}
	ready := func(addr string) error {
		_, err := Query(addr, tc, "PING")
		if err != nil && strings.HasPrefix(err.Error(), "NOAUTH") {
			return nil // the default user is off: TLS answered
		}
		return err
	}
	s.Addr = startProc(t, ready, func(port, _ string) []string {
		args := serverArgs("0", dir, "--tls-port", port, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", s.CA.File, "--tls-auth-clients", auth)
		for _, u := range opts.Users {
			args = append(args, u.args()...)
		}
		if opts.NoDefaultUser {
			args = append(args, "--user", "default", "off")
		}
		return args
	}).addr
	return s
}

// URL is the rediss:// address of database 0 (no credentials).
func (s *TLSServer) URL() string { return "rediss://" + s.Addr + "/0" }

// SentinelMaster is the name the Sentinels of StartSentinel monitor.
const SentinelMaster = "pe-primary"

// Sentinel is one primary, one replica and three Sentinels on loopback,
// tuned so that a failover takes a few seconds (down after 1 s).
type Sentinel struct {
	Sentinels []string // host:port of the three Sentinels
	t         testing.TB
	nodes     map[string]*proc // by address: the primary and the replica
}

// StartSentinel starts the five processes for t and waits until each
// Sentinel knows the replica and the two other Sentinels (a failover
// needs that quorum). They are stopped when t ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	requireReal(t)
	s := &Sentinel{t: t, nodes: map[string]*proc{}}
	primary := startProc(t, nil, func(port, _ string) []string { return serverArgs(port, t.TempDir()) })
	s.nodes[primary.addr] = primary
	host, port, _ := net.SplitHostPort(primary.addr)
	replicaReady := func(addr string) error {
		info, err := Query(addr, nil, "INFO", "replication")
		if err == nil && !strings.Contains(info, "master_link_status:up") {
			err = errors.New("replica link not up")
		}
		return err
	}
	replica := startProc(t, replicaReady, func(rport, _ string) []string {
		return serverArgs(rport, t.TempDir(), "--replicaof", host, port)
	})
	s.nodes[replica.addr] = replica
	for range 3 {
		dir := t.TempDir()
		sp := startProc(t, nil, func(sport, _ string) []string {
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf("port %s\nbind 127.0.0.1\ndir %s\n"+
				"sentinel monitor %s %s %s 2\n"+
				"sentinel down-after-milliseconds %[3]s 1000\n"+
				"sentinel failover-timeout %[3]s 4000\n"+
				"sentinel parallel-syncs %[3]s 1\n", sport, dir, SentinelMaster, host, port)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{conf, "--sentinel"}
		})
		s.Sentinels = append(s.Sentinels, sp.addr)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, sa := range s.Sentinels {
		for {
			info, err := Query(sa, nil, "SENTINEL", "MASTER", SentinelMaster)
			if err == nil && strings.Contains(info, "num-slaves\n1") && strings.Contains(info, "num-other-sentinels\n2") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: Sentinel %s does not know the replica and the other Sentinels: %q, %v", sa, info, err)
			}
			time.Sleep(100 * time.Millisecond) // polling the Sentinels we started, an outside event
		}
	}
	return s
}

// Primary is the address of the primary the Sentinels name now.
func (s *Sentinel) Primary() string {
	s.t.Helper()
	for _, sa := range s.Sentinels {
		r, err := Query(sa, nil, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if hp := strings.Split(r, "\n"); err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1])
		}
	}
	s.t.Fatalf("redistest: no Sentinel names the primary")
	return ""
}

// KillPrimary stops the current primary abruptly (SIGKILL) and returns
// its address.
func (s *Sentinel) KillPrimary() string {
	s.t.Helper()
	addr := s.Primary()
	p, ok := s.nodes[addr]
	if !ok {
		s.t.Fatalf("redistest: the primary %s is none of ours", addr)
	}
	p.kill()
	return addr
}

// Cluster is a Redis Cluster of three primaries on loopback, with or
// without a replica each.
type Cluster struct {
	Nodes []string // host:port of every node
	t     testing.TB
	procs map[string]*proc
}

// ClusterOptions choose a Cluster.
type ClusterOptions struct {
	// Replicas gives each primary that many replicas (0 or 1), for
	// failover tests: a primary is failed over after the node timeout (2 s).
	Replicas int
}

// StartCluster starts three cluster-enabled servers, joins them with
// redis-cli --cluster create (slots spread over the three) and waits until
// every node says cluster_state:ok. They are stopped when t ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return StartClusterWith(t, ClusterOptions{})
}

// StartClusterWith starts a Cluster as opts say.
func StartClusterWith(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	requireReal(t, "redis-cli")
	c := &Cluster{t: t, procs: map[string]*proc{}}
	for range 3 * (1 + min(max(opts.Replicas, 0), 1)) {
		dir := t.TempDir()
		p := startProc(t, nil, func(port, busPort string) []string {
			return serverArgs(port, dir, "--cluster-port", busPort, "--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000")
		})
		c.Nodes = append(c.Nodes, p.addr)
		c.procs[p.addr] = p
	}
	args := append([]string{"--cluster", "create"}, c.Nodes...)
	args = append(args, "--cluster-replicas", strconv.Itoa(min(max(opts.Replicas, 0), 1)), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, err := Query(n, nil, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && c.synced(n, opts.Replicas) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not ok: %q, %v", n, info, err)
			}
			time.Sleep(50 * time.Millisecond) // polling the nodes we started, an outside event
		}
	}
	return c
}

// synced reports whether node n is a primary or a replica whose link to
// its primary is up (always true without replicas).
func (c *Cluster) synced(n string, replicas int) bool {
	if replicas == 0 {
		return true
	}
	info, err := Query(n, nil, "INFO", "replication")
	return err == nil && (strings.Contains(info, "role:master") || strings.Contains(info, "master_link_status:up"))
}

// PrimaryOf is the address of the primary serving key's slot now (not
// failed), as the first node that answers sees it; "" when none does.
func (c *Cluster) PrimaryOf(key string) string {
	ctx := context.Background()
	for _, n := range c.Nodes {
		if c.procs[n].exited() {
			continue
		}
		rdb := client(n, nil)
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		shards, err2 := rdb.ClusterShards(ctx).Result()
		_ = rdb.Close()
		if err != nil || err2 != nil {
			continue
		}
		for _, sh := range shards {
			if !slices.ContainsFunc(sh.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
				continue
			}
			for _, node := range sh.Nodes {
				if node.Role == "master" && node.Health == "online" {
					return net.JoinHostPort(node.IP, strconv.FormatInt(node.Port, 10))
				}
			}
		}
	}
	return ""
}

// Kill stops the node at addr abruptly (SIGKILL).
func (c *Cluster) Kill(addr string) {
	c.t.Helper()
	p, ok := c.procs[addr]
	if !ok {
		c.t.Fatalf("redistest: %s is no node of this cluster", addr)
	}
	p.kill()
}

// Seeds is the nodes comma-separated, as EDGE_REDIS_CLUSTER takes them.
func (c *Cluster) Seeds() string { return strings.Join(c.Nodes, ",") }
