package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		s := webhooks.NewSecret()
		rest, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q does not open whsec_", s)
		}
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil || len(key) != 24 {
			t.Fatalf("secret %q: %d bytes of key, %v; want 24", s, len(key), err)
		}
		if err := webhooks.CheckSecret(s); err != nil {
			t.Fatalf("CheckSecret(%q) = %v", s, err)
		}
		if _, err := standardwebhooks.NewWebhook(s); err != nil {
			t.Fatalf("the reference library refuses %q: %v", s, err)
		}
		if seen[s] {
			t.Fatalf("secret %q made twice", s)
		}
		seen[s] = true
	}
}

func TestCheckSecretRefuses(t *testing.T) {
	for _, s := range []string{
		"",
		"whsec_",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",      // no prefix
		"whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // another prefix
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa",  // 21 bytes
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAAAA", // 27 bytes
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",     // not base64
	} {
		if err := webhooks.CheckSecret(s); !errors.Is(err, webhooks.ErrSecret) {
			t.Errorf("CheckSecret(%q) = %v, want ErrSecret", s, err)
		}
		if err := webhooks.Sign(http.Header{}, s, "evt_1", time.Unix(1, 0), nil); !errors.Is(err, webhooks.ErrSecret) {
			t.Errorf("Sign with %q = %v, want ErrSecret", s, err)
		}
	}
}

// TestSignSpecVector: the test vector of the Standard Webhooks libraries
// (secret, id, timestamp, payload and the signature they publish).
func TestSignSpecVector(t *testing.T) {
	h := http.Header{}
	err := webhooks.Sign(h, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"webhook-id":        "msg_p5jXN8AQM9LWM0D4loKWxJek",
		"webhook-timestamp": "1614265330",
		"webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// TestSignMatchesHMAC computes the signature as the specification words
// it, by hand: base64(HMAC-SHA256(key, id.timestamp.body)), the key being
// the secret's base64 after whsec_; then the reference library verifies
// it, and refuses it with a byte of the body, the id or the timestamp
// changed.
func TestSignMatchesHMAC(t *testing.T) {
	secret := webhooks.NewSecret()
	body := []byte(`{"object":"event","id":"evt_0123","type":"property.updated","data":{"name":"Caf\u00e9"}}`)
	at := time.Now()
	h := http.Header{}
	if err := webhooks.Sign(h, secret, "evt_0123", at, body); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("evt_0123." + h.Get("webhook-timestamp") + "." + string(body)))
	if want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)); h.Get("webhook-signature") != want {
		t.Fatalf("signature %q, want %q", h.Get("webhook-signature"), want)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Fatalf("the reference library: %v", err)
	}
	tampered := append([]byte(nil), body...)
	tampered[len(tampered)-2] = 'X'
	if err := wh.Verify(tampered, h); err == nil {
		t.Error("the reference library verified a changed body")
	}
	for k, v := range map[string]string{"webhook-id": "evt_0124", "webhook-timestamp": "1614265330"} {
		h2 := h.Clone()
		h2.Set(k, v)
		if err := wh.VerifyIgnoringTimestamp(body, h2); err == nil {
			t.Errorf("the reference library verified a changed %s", k)
		}
	}
}
