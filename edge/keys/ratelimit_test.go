package keys

import (
	"strings"
	"testing"
)

func TestParseRateLimit(t *testing.T) {
	r := goodRecord()
	r["rateLimit"] = map[string]any{"perSecond": 0.5, "burst": 20}
	recs, err := Parse(fileOf(t, r))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if rl := recs[0].RateLimit; rl == nil || rl.PerSecond != 0.5 || rl.Burst != 20 {
		t.Errorf("rateLimit = %+v", rl)
	}
	if k := newKey(recs[0]); k.RateLimit == nil || k.RateLimit.Burst != 20 {
		t.Errorf("key rateLimit = %+v", k.RateLimit)
	}
	delete(r, "rateLimit")
	if recs, err := Parse(fileOf(t, r)); err != nil || recs[0].RateLimit != nil {
		t.Errorf("absent rateLimit: %v, %+v", err, recs)
	}
}

func TestParseBadRateLimit(t *testing.T) {
	for name, v := range map[string]any{
		"null":             nil,
		"not an object":    10,
		"empty":            map[string]any{},
		"burst missing":    map[string]any{"perSecond": 10},
		"rate missing":     map[string]any{"burst": 10},
		"rate zero":        map[string]any{"perSecond": 0, "burst": 10},
		"rate negative":    map[string]any{"perSecond": -1, "burst": 10},
		"rate huge":        map[string]any{"perSecond": 1e7, "burst": 10},
		"rate a string":    map[string]any{"perSecond": "10", "burst": 10},
		"burst zero":       map[string]any{"perSecond": 10, "burst": 0},
		"burst fractional": map[string]any{"perSecond": 10, "burst": 1.5},
		"burst huge":       map[string]any{"perSecond": 10, "burst": 1e7},
		"unknown field":    map[string]any{"perSecond": 10, "burst": 10, "window": 60},
		"other casing":     map[string]any{"persecond": 10, "burst": 10},
	} {
		t.Run(name, func(t *testing.T) {
			r := goodRecord()
			r["rateLimit"] = v
			_, err := Parse(fileOf(t, r))
			if err == nil {
				t.Fatal("Parse accepted the file")
			}
			if msg := err.Error(); !strings.Contains(msg, "keys[0] (key_7Hq2Lm9Xa1): rateLimit") {
				t.Errorf("error %q does not name the record and rateLimit", msg)
			}
		})
	}
}
