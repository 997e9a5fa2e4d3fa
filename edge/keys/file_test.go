package keys

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const (
	goodDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	propA      = "3f2b8c1e-5d4a-4e6b-9c7d-1a2b3c4d5e6f"
	propB      = "7a1c9e2d-0b3f-4a5e-8d6c-9f8e7d6c5b4a"
)

// goodRecord returns a valid record as a JSON object.
func goodRecord() map[string]any {
	return map[string]any{
		"id":         "key_7Hq2Lm9Xa1",
		"partner":    "Acme Channel Manager",
		"sha256":     goodDigest,
		"brand":      "aurora",
		"mode":       "live",
		"properties": []any{"*"},
		"status":     "active",
		"expiresAt":  nil,
		"scopes":     []any{"properties:read"},
	}
}

func fileOf(t *testing.T, recs ...map[string]any) []byte {
	t.Helper()
	if recs == nil {
		recs = []map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"keys": recs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseGood(t *testing.T) {
	exp := "2027-01-02T03:04:05+02:00"
	tests := []struct {
		name  string
		edit  func(r map[string]any)
		check func(t *testing.T, r Record)
	}{
		{"example of operations.md", func(map[string]any) {}, func(t *testing.T, r Record) {
			if r.ID != "key_7Hq2Lm9Xa1" || r.Partner != "Acme Channel Manager" || r.Brand != "aurora" ||
				r.Mode != ModeLive || r.Status != StatusActive || r.ExpiresAt != nil ||
				len(r.Properties) != 1 || r.Properties[0] != "*" ||
				len(r.Scopes) != 1 || r.Scopes[0] != ScopePropertiesRead || r.SHA256 != goodDigest {
				t.Errorf("record = %+v", r)
			}
		}},
		{"upper-case digest normalised", func(r map[string]any) { r["sha256"] = strings.ToUpper(goodDigest) },
			func(t *testing.T, r Record) {
				if r.SHA256 != goodDigest {
					t.Errorf("sha256 = %q", r.SHA256)
				}
			}},
		{"property ids lower-cased", func(r map[string]any) { r["properties"] = []any{strings.ToUpper(propA), propB} },
			func(t *testing.T, r Record) {
				if len(r.Properties) != 2 || r.Properties[0] != propA || r.Properties[1] != propB {
					t.Errorf("properties = %q", r.Properties)
				}
			}},
		{"test mode, suspended", func(r map[string]any) { r["mode"] = "test"; r["status"] = "suspended" },
			func(t *testing.T, r Record) {
				if r.Mode != ModeTest || r.Status != StatusSuspended {
					t.Errorf("record = %+v", r)
				}
			}},
		{"expiresAt with offset, kept as UTC", func(r map[string]any) { r["expiresAt"] = exp },
			func(t *testing.T, r Record) {
				want := time.Date(2027, 1, 2, 1, 4, 5, 0, time.UTC)
				if r.ExpiresAt == nil || !r.ExpiresAt.Equal(want) || r.ExpiresAt.Location() != time.UTC {
					t.Errorf("expiresAt = %v", r.ExpiresAt)
				}
			}},
		{"expiresAt absent: no expiry", func(r map[string]any) { delete(r, "expiresAt") },
			func(t *testing.T, r Record) {
				if r.ExpiresAt != nil {
					t.Errorf("expiresAt = %v", r.ExpiresAt)
				}
			}},
		{"scopes absent: all (nil)", func(r map[string]any) { delete(r, "scopes") },
			func(t *testing.T, r Record) {
				if r.Scopes != nil {
					t.Errorf("scopes = %#v, want nil", r.Scopes)
				}
			}},
		{"scopes empty: none (non-nil)", func(r map[string]any) { r["scopes"] = []any{} },
			func(t *testing.T, r Record) {
				if r.Scopes == nil || len(r.Scopes) != 0 {
					t.Errorf("scopes = %#v, want empty non-nil", r.Scopes)
				}
			}},
		{"partner absent", func(r map[string]any) { delete(r, "partner") },
			func(t *testing.T, r Record) {
				if r.Partner != "" {
					t.Errorf("partner = %q", r.Partner)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodRecord()
			tt.edit(r)
			recs, err := Parse(fileOf(t, r))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(recs) != 1 {
				t.Fatalf("got %d records", len(recs))
			}
			tt.check(t, recs[0])
		})
	}
}

func TestParseEmptyList(t *testing.T) {
	recs, err := Parse([]byte(`{"keys":[]}`))
	if err != nil || len(recs) != 0 {
		t.Fatalf("Parse = %v, %v; want no records, no error", recs, err)
	}
}

// TestParseBadRecord changes one field of a good record at a time; each must
// be refused with a message naming the record and the field.
func TestParseBadRecord(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(r map[string]any)
		field string // must appear in the message
	}{
		{"id missing", func(r map[string]any) { delete(r, "id") }, "id:"},
		{"id without prefix", func(r map[string]any) { r["id"] = "7Hq2Lm9Xa1" }, "id:"},
		{"id with bad character", func(r map[string]any) { r["id"] = "key_ab-c" }, "id:"},
		{"id prefix only", func(r map[string]any) { r["id"] = "key_" }, "id:"},
		{"id not a string", func(r map[string]any) { r["id"] = 7 }, "id"},
		{"sha256 missing", func(r map[string]any) { delete(r, "sha256") }, "sha256:"},
		{"sha256 short", func(r map[string]any) { r["sha256"] = goodDigest[:63] }, "sha256:"},
		{"sha256 long", func(r map[string]any) { r["sha256"] = goodDigest + "0" }, "sha256:"},
		{"sha256 not hex", func(r map[string]any) { r["sha256"] = "g" + goodDigest[1:] }, "sha256:"},
		{"brand missing", func(r map[string]any) { delete(r, "brand") }, "brand:"},
		{"brand blank", func(r map[string]any) { r["brand"] = "  " }, "brand:"},
		{"mode missing", func(r map[string]any) { delete(r, "mode") }, "mode:"},
		{"mode other", func(r map[string]any) { r["mode"] = "Live" }, "mode:"},
		{"properties missing", func(r map[string]any) { delete(r, "properties") }, "properties:"},
		{"properties null", func(r map[string]any) { r["properties"] = nil }, "properties:"},
		{"properties empty", func(r map[string]any) { r["properties"] = []any{} }, "properties:"},
		{"properties star mixed", func(r map[string]any) { r["properties"] = []any{"*", propA} }, "properties:"},
		{"properties id then star", func(r map[string]any) { r["properties"] = []any{propA, "*"} }, "properties:"},
		{"properties star twice", func(r map[string]any) { r["properties"] = []any{"*", "*"} }, "properties:"},
		{"properties not a uuid", func(r map[string]any) { r["properties"] = []any{"hotel-1"} }, "properties:"},
		{"properties repeated id", func(r map[string]any) { r["properties"] = []any{propA, strings.ToUpper(propA)} }, "properties:"},
		{"properties not strings", func(r map[string]any) { r["properties"] = []any{1} }, "properties"},
		{"status missing", func(r map[string]any) { delete(r, "status") }, "status:"},
		{"status other", func(r map[string]any) { r["status"] = "revoked" }, "status:"},
		{"expiresAt not a time", func(r map[string]any) { r["expiresAt"] = "tomorrow" }, "expiresAt:"},
		{"expiresAt date only", func(r map[string]any) { r["expiresAt"] = "2027-01-02" }, "expiresAt:"},
		{"expiresAt no zone", func(r map[string]any) { r["expiresAt"] = "2027-01-02T03:04:05" }, "expiresAt:"},
		{"expiresAt number", func(r map[string]any) { r["expiresAt"] = 1700000000 }, "expiresAt:"},
		{"scopes null", func(r map[string]any) { r["scopes"] = nil }, "scopes:"},
		{"scopes not a list", func(r map[string]any) { r["scopes"] = "properties:read" }, "scopes:"},
		{"scopes empty name", func(r map[string]any) { r["scopes"] = []any{""} }, "scopes:"},
		{"partner not a string", func(r map[string]any) { r["partner"] = true }, "partner"},
		{"unknown field", func(r map[string]any) { r["comment"] = "x" }, `unknown field "comment"`},
		{"field in other casing", func(r map[string]any) { delete(r, "mode"); r["Mode"] = "live" }, `unknown field "Mode"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := goodRecord()
			tt.edit(r)
			_, err := Parse(fileOf(t, goodRecordWith("key_first", strings.Repeat("1", 64)), r))
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			msg := err.Error()
			if !strings.Contains(msg, "keys[1]") || !strings.Contains(msg, tt.field) {
				t.Errorf("error %q does not name keys[1] and %q", msg, tt.field)
			}
			if strings.Contains(msg, "keys[0]") {
				t.Errorf("error %q blames the good record", msg)
			}
			if id, ok := r["id"].(string); ok && idPattern.MatchString(id) && !strings.Contains(msg, id) {
				t.Errorf("error %q does not name id %s", msg, id)
			}
		})
	}
}

func goodRecordWith(id, digest string) map[string]any {
	r := goodRecord()
	r["id"], r["sha256"] = id, digest
	return r
}

func TestParseBadFile(t *testing.T) {
	dupID := string(fileOf(t, goodRecordWith("key_a", strings.Repeat("1", 64)), goodRecordWith("key_a", strings.Repeat("2", 64))))
	dupDigest := string(fileOf(t, goodRecordWith("key_a", strings.Repeat("a", 64)), goodRecordWith("key_b", strings.Repeat("A", 64))))
	one := string(fileOf(t, goodRecord()))
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", "empty"},
		{"blank", " \n", "empty"},
		{"not JSON", "keys: []", "invalid JSON"},
		{"list at top", `[]`, "object"},
		{"keys missing", `{}`, `"keys" is required`},
		{"keys null", `{"keys":null}`, `"keys" is required`},
		{"keys not a list", `{"keys":{}}`, "keys"},
		{"unknown top field", `{"keys":[],"version":1}`, `unknown field "version"`},
		{"top field casing", `{"Keys":[]}`, `unknown field "Keys"`},
		{"repeated top field", `{"keys":[],"keys":[]}`, "twice"},
		{"repeated record field", strings.Replace(one, `"mode":"live"`, `"mode":"live","mode":"test"`, 1), `keys[0] (key_7Hq2Lm9Xa1): field "mode" appears twice`},
		{"trailing data", `{"keys":[]} {}`, "after the JSON value"},
		{"trailing garbage", `{"keys":[]}x`, ""},
		{"truncated", one[:len(one)-3], ""},
		{"record not an object", `{"keys":[1]}`, "keys[0]: must be a JSON object"},
		{"invalid UTF-8", "{\"keys\":[],\"x\xff\":1}", "UTF-8"},
		{"byte order mark", "\xef\xbb\xbf{\"keys\":[]}", "byte order mark"},
		{"duplicate id", dupID, "keys[1] (key_a): id: duplicates keys[0] (key_a)"},
		{"duplicate digest in other case", dupDigest, "keys[1] (key_b): sha256: same digest as keys[0] (key_a)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := Parse([]byte(tt.data))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", recs)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestParseReportsEveryProblem: an operator fixes a file in one go.
func TestParseReportsEveryProblem(t *testing.T) {
	r0 := goodRecordWith("key_a", strings.Repeat("1", 64))
	r0["mode"] = "prod"
	r0["status"] = "on"
	r1 := goodRecordWith("key_b", "xyz")
	_, err := Parse(fileOf(t, r0, r1))
	if err == nil {
		t.Fatal("Parse accepted the file")
	}
	for _, want := range []string{"keys[0] (key_a): mode:", "keys[0] (key_a): status:", "keys[1] (key_b): sha256:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestParseErrorsHideValues: a raw key pasted in the wrong place, or a
// digest, never shows up in the error (which is logged).
func TestParseErrorsHideValues(t *testing.T) {
	const raw = "svc_live_SECRETsecretSECRETsecret1234"
	cases := []func(r map[string]any){
		func(r map[string]any) { r["sha256"] = raw },
		func(r map[string]any) { r["id"] = raw },
		func(r map[string]any) { r[raw] = "x" },
		func(r map[string]any) { r["mode"] = raw },
		func(r map[string]any) { r["properties"] = []any{raw} },
		func(r map[string]any) { r["expiresAt"] = raw },
		func(r map[string]any) { r["scopes"] = []any{raw + " x"} },
	}
	for i, edit := range cases {
		r := goodRecord()
		edit(r)
		_, err := Parse(fileOf(t, r))
		if err == nil {
			t.Fatalf("case %d: accepted", i)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("case %d: error shows the value: %q", i, err)
		}
	}
	dup := fileOf(t, goodRecordWith("key_a", goodDigest), goodRecordWith("key_b", goodDigest))
	if _, err := Parse(dup); err == nil || strings.Contains(err.Error(), goodDigest[:16]) {
		t.Errorf("duplicate digest error = %v; want an error without the digest", err)
	}
}
