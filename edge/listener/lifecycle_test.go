package listener_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/listener/listenertest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 8: health turns 503 once shutdown begins, while the
// server still answers during the drain delay; in-flight work completes.
func TestDrain(t *testing.T) {
	var draining atomic.Bool
	store := emptyStore(t, false)
	h := edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch), Healthy: func() bool { return !draining.Load() && store.Usable() }}, store, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := listenertest.Serve(t, ctx, listener.ServeConfig{Handler: h, DrainDelay: 300 * time.Millisecond, OnDraining: func() { draining.Store(true) }})
	base := "http://" + addr + "/v1/health"
	if code, body := testkit.Get(t, base); code != 200 || body != `{"status":"ok"}` {
		t.Fatalf("before shutdown: %d %s", code, body)
	}
	cancel()
	deadline := time.Now().Add(250 * time.Millisecond)
	saw := false
	for time.Now().Before(deadline) && !saw {
		code, body := testkit.Get(t, base)
		saw = code == 503 && body == `{"status":"unhealthy"}`
	}
	if !saw {
		t.Errorf("health never answered 503 unhealthy while draining")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if _, err := http.Get(base); err == nil {
		t.Errorf("still listening after shutdown")
	}
}

// No usable key set: unhealthy from the start.
func TestUnhealthyWithoutKeys(t *testing.T) {
	store := emptyStore(t, true)
	srv := http.Server{Handler: edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch), Healthy: store.Usable}, store, nil, nil)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	res, err := http.Get("http://" + ln.Addr().String() + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || string(body) != `{"status":"unhealthy"}` || res.Header.Get("Retry-After") != "1" {
		t.Errorf("health with no keys: %d %s Retry-After %q", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
}

// TLS with a certificate made here: HTTPS and HTTP/2.
func TestTLS(t *testing.T) {
	certFile, keyFile, pool := makeCert(t)
	store := emptyStore(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := listenertest.Serve(t, ctx, listener.ServeConfig{Handler: edge.NewServer(edge.Config{Brand: testBrand, Now: testkit.From(testkit.Epoch)}, store, nil, nil),
		TLSCertFile: certFile, TLSKeyFile: keyFile})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	res, err := client.Get("https://" + addr + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != `{"status":"ok"}` || res.ProtoMajor != 2 {
		t.Errorf("HTTPS: %s %d %s", res.Proto, res.StatusCode, body)
	}
	if code, _ := testkit.Get(t, "http://"+addr+"/v1/health"); code == 200 {
		t.Errorf("plain HTTP was served on the TLS port")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if err := listener.Serve(context.Background(), listener.ServeConfig{Addr: "127.0.0.1:0", TLSCertFile: certFile}); err == nil {
		t.Errorf("a certificate without a key was accepted")
	}
}

// emptyStore opens a key file with one key, or none.
func emptyStore(t *testing.T, none bool) *keys.Store {
	t.Helper()
	if none {
		return keystest.Open(t)
	}
	_, rec := keystest.Mint(t, testBrand, keys.ModeLive)
	return keystest.Open(t, rec)
}

func makeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "partner-edge test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kb, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile, pool
}
