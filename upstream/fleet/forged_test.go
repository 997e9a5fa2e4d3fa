package fleet

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// docs/contract.md section 15: a publication is used only when its HMAC verifies under the
// fleet secret and its load time is not beyond MaxSkew ahead; anything else
// means a walk of the PMS, whose result overwrites it.
func TestForgedPublicationsRefused(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		client := f.client(t)
		name := SnapKey("acme", "live")
		payload, _ := EncodeSnapshot(props(), loadedAt)
		future := loadedAt.Add(time.Hour)
		futurePayload, _ := EncodeSnapshot(props(), future)
		unsigned := make([]byte, 17)
		unsigned[0] = 1
		binary.BigEndian.PutUint64(unsigned[1:9], uint64(loadedAt.UnixMilli()))
		unsigned = append(unsigned, payload...)
		rdb := f.raw(t)

		for _, tc := range []struct {
			what  string
			write func() error
		}{
			{"unsigned frame", func() error { return rdb.Set(t.Context(), name+":data", unsigned, 0).Err() }},
			{"another secret", func() error {
				return NewStore(client, 0, []byte("another-secret-of-thirty-two-byt")).Publish(t.Context(), name, loadedAt.UnixMilli(), payload, time.Minute)
			}},
			{"the secret, loaded an hour ahead", func() error {
				return NewStore(client, 0, testSecret).Publish(t.Context(), name, future.UnixMilli(), futurePayload, time.Minute)
			}},
		} {
			if err := tc.write(); err != nil {
				t.Fatal(err)
			}
			p := &pms{}
			c := newCoordinator(NewStore(client, 0, testSecret))
			l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
			if err != nil || l.Source == SourceShared || p.walks.Load() != 1 {
				t.Errorf("%s: source %s, %v, walks %d; want the PMS walked, the publication refused", tc.what, l.Source, err, p.walks.Load())
			}
		}
		// The store itself: a wrong secret does not verify.
		if err := NewStore(client, 0, testSecret).Publish(t.Context(), name, loadedAt.UnixMilli(), payload, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := NewStore(client, 0, []byte("x")).Fetch(t.Context(), name); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("fetch under another secret: %v; want ErrUnauthenticated", err)
		}
		if got, _, _, err := NewStore(client, 0, testSecret).Fetch(t.Context(), name); err != nil || len(got) != len(payload) {
			t.Errorf("fetch under the secret: %d bytes, %v", len(got), err)
		}
	})
}
