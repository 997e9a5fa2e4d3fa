package testkit

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// A written pair loads as a TLS key pair for 127.0.0.1 with the serial
// asked for, and a second write replaces it and leaves no temporary file.
func TestWriteCertPair(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, serial := range []int64{7, 8} {
		WriteCertPair(t, certFile, keyFile, serial)
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if cert.SerialNumber.Int64() != serial {
			t.Errorf("serial %v, want %d", cert.SerialNumber, serial)
		}
		if err := cert.VerifyHostname("127.0.0.1"); err != nil {
			t.Error(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in the directory, want the 2 replaced ones", len(entries))
	}
}
