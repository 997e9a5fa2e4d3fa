package keys

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partner-edge/partner-edge/mapping"
)

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// mintSecretLen base62 characters carry about 190 bits of randomness.
	mintSecretLen = 32
	mintIDLen     = 10
)

// Mint makes a new key from random (crypto/rand.Reader outside tests) and
// its record for the key file: an active key of brand and mode, granted
// properties (every property of the brand when none are given), with the
// scope properties:read and no expiry. The token is shown to the partner
// once; only the record, which holds its SHA-256, is kept.
func Mint(random io.Reader, brand string, mode Mode, properties []string) (token string, rec Record, err error) {
	if strings.TrimSpace(brand) == "" {
		return "", Record{}, errors.New("brand is required")
	}
	if mode != ModeLive && mode != ModeTest {
		return "", Record{}, errors.New(`mode must be "live" or "test"`)
	}
	if len(properties) == 0 {
		properties = []string{AllPropertiesGrant}
	}
	props, err := normaliseProperties(properties)
	if err != nil {
		return "", Record{}, fmt.Errorf("properties: %w", err)
	}
	secret, err := randomBase62(random, mintSecretLen)
	if err != nil {
		return "", Record{}, err
	}
	id, err := randomBase62(random, mintIDLen)
	if err != nil {
		return "", Record{}, err
	}
	token = PrefixLive + secret
	if mode == ModeTest {
		token = PrefixTest + secret
	}
	d := Digest(token)
	rec = Record{
		ID:         "key_" + id,
		SHA256:     hex.EncodeToString(d[:]),
		Brand:      brand,
		Mode:       mode,
		Properties: props,
		Status:     StatusActive,
		Scopes:     []string{ScopePropertiesRead},
	}
	return token, rec, nil
}

// randomBase62 draws n characters of [0-9A-Za-z] uniformly: bytes of 248 and
// above are discarded so that no character is more likely than another.
func randomBase62(random io.Reader, n int) (string, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4)
	for len(out) < n {
		if _, err := io.ReadFull(random, buf); err != nil {
			return "", fmt.Errorf("reading randomness: %w", err)
		}
		for _, b := range buf {
			if b < 248 && len(out) < n { // 248 = 4*62
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out), nil
}

// RunNew implements `edge keys new ARGS...`: it prints to stdout a key from
// Mint ("key: svc_...") and its record as indented JSON, and a warning to
// stderr. Usage and flag errors go to stderr; -h returns flag.ErrHelp.
func RunNew(args []string, stdout, stderr io.Writer, random io.Reader) error {
	fs := flag.NewFlagSet("edge keys new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brand := fs.String("brand", "", "brand the key belongs to (required)")
	mode := fs.String("mode", "", `"live" (served by PMS_BASE_URL) or "test" (served by PMS_SANDBOX_URL) (required)`)
	props := fs.String("properties", "", "comma-separated property ids the key may see (default: every property of the brand)")
	partner := fs.String("partner", "", "name of the partner holding the key")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: edge keys new --brand B --mode live|test [--properties id,id] [--partner NAME]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("keys new: unexpected argument %q", fs.Arg(0))
	}
	if strings.TrimSpace(*brand) == "" {
		fs.Usage()
		return errors.New("keys new: --brand is required")
	}
	if *mode != string(ModeLive) && *mode != string(ModeTest) {
		fs.Usage()
		return errors.New(`keys new: --mode must be "live" or "test"`)
	}
	var list []string
	if *props != "" {
		for _, p := range strings.Split(*props, ",") {
			p = strings.TrimSpace(p)
			if _, ok := mapping.ParseID(p); !ok && p != AllPropertiesGrant {
				return fmt.Errorf("keys new: --properties: %q is not a property id (UUID)", p)
			}
			list = append(list, p)
		}
	}
	token, rec, err := Mint(random, *brand, Mode(*mode), list)
	if err != nil {
		return fmt.Errorf("keys new: %w", err)
	}
	rec.Partner = *partner
	out, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("keys new: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "key: %s\n%s\n", token, out); err != nil {
		return fmt.Errorf("keys new: %w", err)
	}
	fmt.Fprintln(stderr, "warning: the key is shown only this once; the key file keeps only its SHA-256, so it cannot be recovered")
	return nil
}

// WriteDemoFile writes the demo's key file to path (mode 0600): one live
// and one test key of brand, minted from random, with the scopes
// properties:read and webhooks:manage, and returns them. The
// demo prints them on its banner (README.md).
func WriteDemoFile(path, brand string, random io.Reader) (liveKey, testKey string, err error) {
	var live, test Record
	if liveKey, live, err = Mint(random, brand, ModeLive, nil); err != nil {
		return "", "", err
	}
	if testKey, test, err = Mint(random, brand, ModeTest, nil); err != nil {
		return "", "", err
	}
	live.Partner, test.Partner = "Demo partner (live)", "Demo partner (test)"
	// The demo's banner shows how to create a webhook endpoint: its keys
	// may (docs/webhooks.md).
	live.Scopes = append(live.Scopes, ScopeWebhooksManage)
	test.Scopes = append(test.Scopes, ScopeWebhooksManage)
	b, err := render([]Record{live, test})
	if err != nil {
		return "", "", err
	}
	return liveKey, testKey, os.WriteFile(path, b, 0o600)
}
