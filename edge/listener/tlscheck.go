package listener

import "errors"

// What a CheckTLSPair error refused (RefusedTLSFile).
const (
	TLSCertificate = refusedCert // the certificate file: unreadable, no certificate, or not valid now
	TLSKey         = refusedKey  // the key file: unreadable or no private key
	TLSPair        = refusedPair // each file is good alone, but the key is not the certificate's
)

// CheckTLSPair loads the pair as Serve will (bounded regular files, a key
// matching the certificate, valid now) without serving it, so that a
// program can refuse a pair it cannot serve before it opens any listener
// (docs/contract.md section 22). RefusedTLSFile says which file an error
// refused.
func CheckTLSPair(certFile, keyFile string) error {
	_, err := newCertStore(ServeConfig{TLSCertFile: certFile, TLSKeyFile: keyFile})
	return err
}

// RefusedTLSFile is what a CheckTLSPair (or Serve) error refused:
// TLSCertificate, TLSKey or TLSPair; "" for any other error or nil.
func RefusedTLSFile(err error) string {
	if r, ok := errors.AsType[*tlsRefusal](err); ok {
		return r.what
	}
	return ""
}
