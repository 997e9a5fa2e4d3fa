package listener

import "crypto/tls"

// tlsCipherSuites are the TLS 1.2 suites the edge accepts: forward-secret
// (ECDHE) and AEAD only (AES-GCM, ChaCha20-Poly1305); no CBC, no RSA key
// exchange. TLS 1.3's suites are all AEAD and not configurable. The list
// includes TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, which HTTP/2 requires.
var tlsCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// newTLSConfig is the public listener's TLS: 1.2 with AEAD suites, or 1.3;
// the certificate is looked up on every handshake, so a reload takes effect
// for the next connection without a restart.
func newTLSConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   tlsCipherSuites,
		GetCertificate: getCert,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}
