package events

import (
	"math"
	"strings"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, p := range []Pos{{0, 0}, {1_700_000_000_123, 7}, EndOf(1_800_000_000_000), {math.MaxInt64, math.MaxUint32}} {
		c := string(appendCursor(nil, 'l', p))
		if len(c) != cursorLen || !strings.HasPrefix(c, "evt_") {
			t.Fatalf("cursor %q: want evt_ and 26 characters", c)
		}
		got, ok := parseCursor(c, 'l')
		if !ok || got != p {
			t.Errorf("parse(%q) = %v, %v; want %v", c, got, ok, p)
		}
		if _, ok := parseCursor(c, 't'); ok {
			t.Errorf("a live cursor %q read as a test one", c)
		}
	}
}

func TestCursorRefusesWhatWasNotIssued(t *testing.T) {
	good := string(appendCursor(nil, 'l', Pos{1_700_000_000_000, 3}))
	bad := []string{
		"", "evt_", good[:len(good)-1], good + "0", "EVT_" + good[4:], strings.ToUpper(good),
		good[:10] + "i" + good[11:], // not in the alphabet
		"evt_00000000000000000000000000",
	}
	// Each single-character change of the body (a typo) is refused.
	for i := len(cursorPrefix); i < len(good); i++ {
		for _, c := range []byte(base32Alphabet) {
			if c != good[i] {
				bad = append(bad, good[:i]+string(c)+good[i+1:])
			}
		}
	}
	for _, s := range bad {
		if p, ok := parseCursor(s, 'l'); ok {
			t.Errorf("parse(%q) = %v: want refused", s, p)
		}
	}
}

func TestCursorParseAllocatesNothing(t *testing.T) {
	c := string(appendCursor(nil, 'l', Pos{1_700_000_000_000, 3}))
	if n := testing.AllocsPerRun(100, func() { parseCursor(c, 'l') }); n != 0 {
		t.Errorf("parseCursor allocates %v times", n)
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(string(appendCursor(nil, 'l', Pos{1_700_000_000_000, 3})))
	f.Add("evt_zzzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := parseCursor(s, 'l')
		if ok && string(appendCursor(nil, 'l', p)) != s {
			t.Errorf("%q parsed to %v, which is written %q", s, p, appendCursor(nil, 'l', p))
		}
	})
}
