package listener_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/listener/listenertest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// tlsEdge serves the edge's health over TLS with a certificate of serial 1.
type tlsEdge struct {
	addr              string
	certFile, keyFile string
	reload            chan struct{}
	logs              *testkit.LogBuffer
	loads             chan struct{} // a value after each load attempt (at most one pending)
}

func serveTLS(t *testing.T, cfg listener.ServeConfig) *tlsEdge {
	t.Helper()
	dir := t.TempDir()
	e := &tlsEdge{certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key"),
		reload: make(chan struct{}), logs: &testkit.LogBuffer{}, loads: make(chan struct{}, 1)}
	testkit.WriteCertPair(t, e.certFile, e.keyFile, 1)
	ctx, cancel := context.WithCancel(context.Background())
	if cfg.Handler == nil {
		cfg.Handler = edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch)}, emptyStore(t, false), nil, nil)
	}
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSReload = e.certFile, e.keyFile, e.reload
	cfg.Logger = slog.New(slog.NewJSONHandler(e.logs, nil))
	// A tiny settle: the tests wait on the load attempts, not on the timer.
	cfg = listener.WithTLSTestHooks(cfg, time.Millisecond, func() {
		select {
		case e.loads <- struct{}{}:
		default: // one pending value is enough to look again
		}
	})
	addr, done := listenertest.Serve(t, ctx, cfg)
	e.addr = addr
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// handshake connects with c (InsecureSkipVerify set: the tests look at the
// certificate themselves) and returns the connection's state.
func (e *tlsEdge) handshake(c *tls.Config) (tls.ConnectionState, error) {
	c = c.Clone()
	c.InsecureSkipVerify = true
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", e.addr, c)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

func (e *tlsEdge) serial(t *testing.T) int64 {
	t.Helper()
	st, err := e.handshake(&tls.Config{})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return st.PeerCertificates[0].SerialNumber.Int64()
}

// docs/contract.md section 10, TLS: HTTP/2 is negotiated, answers carry HSTS, TLS 1.1 and CBC
// suites are refused while TLS 1.2 with AES-GCM and TLS 1.3 are served.
func TestTLSPolicy(t *testing.T) {
	e := serveTLS(t, listener.ServeConfig{})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	res, err := client.Get("https://" + e.addr + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.ProtoMajor != 2 || res.StatusCode != 200 {
		t.Errorf("HTTPS health: %s %d", res.Proto, res.StatusCode)
	}
	if got := res.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") || got == "max-age=0" {
		t.Errorf("Strict-Transport-Security %q", got)
	}

	if _, err := e.handshake(&tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil ||
		!strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1: %v, want refused (protocol version)", err)
	}
	cbc := []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
	if _, err := e.handshake(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: cbc}); err == nil {
		t.Errorf("TLS 1.2 with only CBC suites was accepted")
	}
	st, err := e.handshake(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}})
	if err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("TLS 1.2 with AES-GCM: %v", err)
	}
	if st, err := e.handshake(&tls.Config{}); err != nil || st.Version != tls.VersionTLS13 {
		t.Errorf("TLS 1.3: %v (version %x)", err, st.Version)
	}
}

// HSTS only on TLS: over plain HTTP the header means nothing and is not sent.
func TestNoHSTSOverPlainHTTP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := listenertest.Serve(t, ctx, listener.ServeConfig{Handler: edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch)}, emptyStore(t, false), nil, nil)})
	res, err := http.Get("http://" + addr + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("plain HTTP sent Strict-Transport-Security %q", got)
	}
	cancel()
	<-done
}

// docs/contract.md section 10, TLS rotation: a renewed certificate is served by the next
// handshake without a restart, whether the files changed (watch) or SIGHUP
// asked (TLSReload); a bad new certificate is logged and the old one kept.
func TestTLSCertificateReload(t *testing.T) {
	var reloadsOK, reloadsFailed atomic.Int32 // ServeConfig.OnTLSReload: the metric's hook
	e := serveTLS(t, listener.ServeConfig{OnTLSReload: func(ok bool) {
		if ok {
			reloadsOK.Add(1)
		} else {
			reloadsFailed.Add(1)
		}
	}})
	if got := e.serial(t); got != 1 {
		t.Fatalf("serial %d at start", got)
	}

	testkit.WriteCertPair(t, e.certFile, e.keyFile, 2) // a renewal replaces the files
	e.untilLoaded(t, func() bool { return e.serial(t) == 2 })

	// A bad renewal: a certificate whose key does not match.
	other := filepath.Join(t.TempDir(), "other")
	testkit.WriteCertPair(t, other+".crt", other+".key", 3)
	crt, _ := os.ReadFile(other + ".crt")
	// The watch may have looked between the renewal's two renames: count
	// the failures logged before this one.
	failures := func() int { return strings.Count(e.logs.String(), "TLS certificate reload failed") }
	before := failures()
	testkit.ReplaceFile(t, e.certFile, crt)
	e.untilLoaded(t, func() bool { return failures() > before })
	e.reload <- struct{}{} // SIGHUP: same bad pair, rejected again
	if got := e.serial(t); got != 2 {
		t.Errorf("after a bad renewal the edge serves serial %d, want the old 2", got)
	}
	// Garbage is rejected the same way.
	testkit.ReplaceFile(t, e.certFile, []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"))
	e.reload <- struct{}{}
	if got := e.serial(t); got != 2 {
		t.Errorf("after a garbage certificate the edge serves serial %d, want the old 2", got)
	}

	// SIGHUP picks up a good pair even with the watch not yet settled.
	testkit.WriteCertPair(t, e.certFile, e.keyFile, 4)
	e.reload <- struct{}{}
	e.untilLoaded(t, func() bool { return e.serial(t) == 4 })
	if !strings.Contains(e.logs.String(), "TLS certificate reloaded") {
		t.Errorf("no reload logged: %s", e.logs.String())
	}
	if reloadsOK.Load() < 2 || reloadsFailed.Load() < 2 {
		t.Errorf("OnTLSReload saw %d ok and %d failed reloads, want at least 2 of each", reloadsOK.Load(), reloadsFailed.Load())
	}
}

// A certificate that cannot be loaded at start-up stops Serve with an error.
func TestTLSBadCertificateAtStart(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	_ = os.WriteFile(certFile, []byte("nope"), 0o600)
	_ = os.WriteFile(keyFile, []byte("nope"), 0o600)
	err := listener.Serve(context.Background(), listener.ServeConfig{Addr: "127.0.0.1:0", TLSCertFile: certFile, TLSKeyFile: keyFile})
	if err == nil || !strings.Contains(err.Error(), certFile) {
		t.Errorf("bad certificate at start: %v", err)
	}
}

// docs/contract.md section 10: an HTTP/2 client that stalls mid-frame is dropped within about
// ReadHeaderTimeout (the HTTP/2 ping timeouts), not held for the 120 s
// idle timeout.
func TestStalledHTTP2ClientDropped(t *testing.T) {
	e := serveTLS(t, listener.ServeConfig{ReadHeaderTimeout: 400 * time.Millisecond})
	conn, err := tls.Dial("tcp", e.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN %q", p)
	}
	var frames bytes.Buffer
	frames.WriteString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	frames.Write([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})        // empty SETTINGS
	frames.Write([]byte{0, 0, 0, 4, 1, 0, 0, 0, 0})        // SETTINGS ack
	frames.Write([]byte{0, 0, 40, 1, 4, 0, 0, 0, 1, 0x82}) // a HEADERS frame of 40 bytes, 1 sent
	if _, err := conn.Write(frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Read whatever the server sends (its SETTINGS, pings) and never answer
	// it. The bound is far below the idle timeout and above the ping timing.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a stalled HTTP/2 connection was still open after 20 s")
	}
}

// untilLoaded waits for load attempts of the certificate files (the
// watch's or SIGHUP's) until cond holds; the bound is on a file-system
// notification, not on a timer of the listener.
func (e *tlsEdge) untilLoaded(t *testing.T, cond func() bool) {
	t.Helper()
	bound := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-e.loads:
		case <-bound:
			t.Fatalf("condition never held after the certificate files changed")
		}
	}
}
