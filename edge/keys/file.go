package keys

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/partner-edge/partner-edge/mapping"
)

// Record statuses.
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
)

// AllPropertiesGrant is the properties entry that grants every property of
// the key's brand; it stands alone (["*"]).
const AllPropertiesGrant = "*"

// File is the key file's top-level object (operations.md, "Key file").
type File struct {
	Keys []Record `json:"keys"`
}

// Record is one key record of the key file, fields in the order of
// operations.md. It holds the key's SHA-256 digest, never the key.
type Record struct {
	// ID is the public id: key_ followed by [A-Za-z0-9]+.
	ID string `json:"id"`
	// Partner names the partner holding the key; free text, may be empty.
	Partner string `json:"partner"`
	// SHA256 is the lower-case hex SHA-256 of the whole key string; empty
	// when the record is for OAuth 2.0 tokens only (ClientID set).
	SHA256 string `json:"sha256,omitzero"`
	Brand  string `json:"brand"`
	Mode   Mode   `json:"mode"`
	// Properties is ["*"] for every property of the brand, or lower-case
	// property ids.
	Properties []string `json:"properties"`
	// Status is StatusActive or StatusSuspended.
	Status string `json:"status"`
	// ExpiresAt is nil when the key does not expire (JSON null).
	ExpiresAt *time.Time `json:"expiresAt"`
	// Scopes nil means the field is absent: every scope. A non-nil empty
	// list grants no scope at all.
	Scopes []string `json:"scopes,omitzero"`
	// RateLimit is the key's own quota; nil (absent) means the deployment's
	// default applies.
	RateLimit *RateLimit `json:"rateLimit,omitzero"`
	// ClientID is the OAuth 2.0 client whose access tokens act as this
	// record (docs/contract.md section 12); empty: API key only. Every record
	// has a SHA256, a ClientID or both.
	ClientID string `json:"clientId,omitzero"`
}

// maxErrors caps how many problems one parse reports.
const maxErrors = 20

var (
	idPattern   = regexp.MustCompile(`^key_[A-Za-z0-9]+$`)
	fileFields  = map[string]bool{"keys": true}
	recordField = map[string]bool{
		"id": true, "partner": true, "sha256": true, "brand": true, "mode": true,
		"properties": true, "status": true, "expiresAt": true, "scopes": true,
		"rateLimit": true, "clientId": true,
	}
)

// wireRecord decodes one record; expiresAt and scopes stay raw so that null,
// absent and malformed can be told apart.
type wireRecord struct {
	ID         string          `json:"id"`
	Partner    string          `json:"partner"`
	SHA256     string          `json:"sha256"`
	Brand      string          `json:"brand"`
	Mode       Mode            `json:"mode"`
	Properties []string        `json:"properties"`
	Status     string          `json:"status"`
	ExpiresAt  json.RawMessage `json:"expiresAt"`
	Scopes     json.RawMessage `json:"scopes"`
	RateLimit  json.RawMessage `json:"rateLimit"`
	ClientID   *string         `json:"clientId"`
}

// Parse parses and validates the content of a key file and returns its
// records, normalised (lower-case digests and property ids, UTC expiry).
// The whole file is rejected on any problem: the error lists the problems,
// each naming the record (index and, when valid, id) and the field, never a
// field's value. {"keys":[]} is a valid, empty file.
func Parse(data []byte) ([]Record, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("file is empty")
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return nil, errors.New("file starts with a byte order mark; save it as UTF-8 without BOM")
	}
	if !utf8.Valid(data) {
		return nil, errors.New("file is not valid UTF-8")
	}
	if err := checkFields(data, fileFields, "top level"); err != nil {
		return nil, err
	}
	var top struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := decodeStrict(data, &top); err != nil {
		return nil, fmt.Errorf("top level: %w", err)
	}
	if top.Keys == nil {
		return nil, errors.New(`top level: "keys" is required and must be a list`)
	}
	var problems []error
	add := func(err error) {
		if len(problems) < maxErrors {
			problems = append(problems, err)
		} else if len(problems) == maxErrors {
			problems = append(problems, errors.New("further problems not shown"))
		}
	}
	recs := make([]Record, 0, len(*top.Keys))
	ids := map[string]string{}     // id -> label of the first record with it
	digests := map[string]string{} // digest -> label of the first record with it
	clients := map[string]string{} // clientId -> label of the first record with it
	for i, raw := range *top.Keys {
		rec, label, errs := parseRecord(i, raw)
		for _, err := range errs {
			add(err)
		}
		if len(errs) > 0 {
			continue
		}
		if first, dup := ids[rec.ID]; dup {
			add(fmt.Errorf("%s: id: duplicates %s", label, first))
			continue
		}
		ids[rec.ID] = label
		if first, dup := digests[rec.SHA256]; dup && rec.SHA256 != "" {
			add(fmt.Errorf("%s: sha256: same digest as %s", label, first))
			continue
		}
		if first, dup := clients[rec.ClientID]; dup && rec.ClientID != "" {
			add(fmt.Errorf("%s: clientId: same client as %s", label, first))
			continue
		}
		digests[rec.SHA256], clients[rec.ClientID] = label, label // "" never counts as a repeat
		recs = append(recs, rec)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return recs, nil
}

// parseRecord decodes and validates record i. label names it for messages.
func parseRecord(i int, raw json.RawMessage) (Record, string, []error) {
	label := fmt.Sprintf("keys[%d]", i)
	// The id is read leniently first so that every message can name it.
	var peek struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &peek) == nil && idPattern.MatchString(peek.ID) {
		label = fmt.Sprintf("keys[%d] (%s)", i, peek.ID)
	}
	if err := checkFields(raw, recordField, label); err != nil {
		return Record{}, label, []error{err}
	}
	var w wireRecord
	if err := decodeStrict(raw, &w); err != nil {
		return Record{}, label, []error{fmt.Errorf("%s: %w", label, err)}
	}
	rec, errs := validate(w)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%s: %w", label, err)
	}
	return rec, label, errs
}

// validate checks every field of a decoded record and normalises it.
func validate(w wireRecord) (Record, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	rec := Record{ID: w.ID, Partner: w.Partner, Brand: w.Brand, Mode: w.Mode, Status: w.Status}

	if !idPattern.MatchString(w.ID) {
		bad("id: must be key_ followed by letters and digits")
	}
	switch {
	case w.SHA256 == "" && w.ClientID != nil:
		// tokens only: clientId is checked below
	case len(w.SHA256) != 64 || !isHex(w.SHA256):
		bad("sha256: must be 64 hex characters (the SHA-256 of the whole key); omit it only with clientId")
	default:
		rec.SHA256 = strings.ToLower(w.SHA256)
	}
	if w.ClientID != nil {
		if !validClientID(*w.ClientID) {
			bad("clientId: must be 1 to %d printable ASCII characters without spaces", maxClientID)
		} else {
			rec.ClientID = *w.ClientID
		}
	}
	if strings.TrimSpace(w.Brand) == "" {
		bad("brand: is required")
	}
	if w.Mode != ModeLive && w.Mode != ModeTest {
		bad(`mode: must be "live" or "test"`)
	}
	var err error
	if rec.Properties, err = normaliseProperties(w.Properties); err != nil {
		bad("properties: %w", err)
	}
	if w.Status != StatusActive && w.Status != StatusSuspended {
		bad(`status: must be "active" or "suspended"`)
	}
	if rec.ExpiresAt, err = parseExpiry(w.ExpiresAt); err != nil {
		bad("expiresAt: %w", err)
	}
	if rec.Scopes, err = parseScopes(w.Scopes); err != nil {
		bad("scopes: %w", err)
	}
	if rec.RateLimit, err = parseRateLimit(w.RateLimit); err != nil {
		bad("rateLimit: %w", err)
	}
	return rec, errs
}

// normaliseProperties checks a properties list: exactly ["*"], or property
// ids (UUIDs, returned lower-case) without repeats.
func normaliseProperties(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, errors.New(`must be ["*"] or a non-empty list of property ids`)
	}
	if len(in) == 1 && in[0] == AllPropertiesGrant {
		return []string{AllPropertiesGrant}, nil
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for i, p := range in {
		if p == AllPropertiesGrant {
			return nil, errors.New(`"*" must stand alone, not mixed with property ids`)
		}
		id, ok := mapping.ParseID(p)
		if !ok {
			return nil, fmt.Errorf("entry %d is not a property id (UUID)", i)
		}
		if seen[id] {
			return nil, fmt.Errorf("entry %d repeats a property id", i)
		}
		seen[id] = true
		out = append(out, id)
	}
	return out, nil
}

// parseExpiry reads expiresAt: absent or null means no expiry.
func parseExpiry(raw json.RawMessage) (*time.Time, error) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var s string
	var t time.Time
	if json.Unmarshal(raw, &s) != nil || t.UnmarshalText([]byte(s)) != nil {
		return nil, errors.New("must be an RFC 3339 time or null")
	}
	t = t.UTC()
	return &t, nil
}

// parseScopes reads scopes: absent gives nil (all scopes); a list gives
// exactly those scopes, an empty list none. null is refused: omit the field
// to grant every scope.
func parseScopes(raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	if string(raw) == "null" {
		return nil, errors.New("must be a list of scopes; omit the field to grant every scope")
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil, errors.New("must be a list of strings")
	}
	for i, s := range list {
		if s == "" || strings.ContainsAny(s, " \t\r\n") {
			return nil, fmt.Errorf("entry %d must be a non-empty scope name without spaces", i)
		}
	}
	return list, nil
}

// maxClientID bounds a clientId: client ids are short identifiers
// (RFC 6749 leaves their form to the authorization server).
const maxClientID = 255

// validClientID reports whether id can be a client_id claim to match:
// visible ASCII (RFC 6749 appendix A.1: VSCHAR, space excluded), bounded.
func validClientID(id string) bool {
	return id != "" && len(id) <= maxClientID && !strings.ContainsFunc(id, func(r rune) bool { return r <= 0x20 || r > 0x7e })
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// decodeStrict decodes exactly one JSON value into v: unknown fields and
// trailing data are errors. Errors name fields and JSON kinds, never values.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// describe rewrites a decoding error into a message without values.
func describe(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		kind, _, _ := strings.Cut(typ.Value, " ")
		if typ.Field == "" {
			return fmt.Errorf("expected %s, found a JSON %s", jsonKind(typ.Type.Kind().String()), kind)
		}
		return fmt.Errorf("%s: wrong type (a JSON %s)", typ.Field, kind)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("JSON ends too early")
	}
	return errors.New("invalid JSON")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map", "ptr":
		return "an object"
	case "slice", "array":
		return "a list"
	}
	return "a " + goKind
}

// checkFields walks the top level of a JSON object and refuses field names
// outside allowed (compared case-sensitively, unlike encoding/json) and
// repeated names (which encoding/json would silently let the last win).
func checkFields(data []byte, allowed map[string]bool, label string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", label, describe(err))
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%s: must be a JSON object", label)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", label, describe(err))
		}
		name, _ := tok.(string)
		if !allowed[name] {
			return fmt.Errorf("%s: unknown field %q", label, clip(name))
		}
		if seen[name] {
			return fmt.Errorf("%s: field %q appears twice", label, name)
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("%s: %w", label, describe(err))
		}
	}
	return nil
}

// clip shortens an unknown field name for a message: a field name is not a
// value, but an operator may have pasted anything there.
func clip(s string) string {
	if len(s) > 40 || strings.HasPrefix(s, PrefixLive) || strings.HasPrefix(s, PrefixTest) {
		return "…"
	}
	return s
}
