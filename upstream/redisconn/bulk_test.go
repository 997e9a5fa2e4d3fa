package redisconn

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// slowRedis is a Redis on loopback that answers every command +PONG once
// release is closed (HELLO at once, as a Redis older than 6 does): as
// slow as the test wants, without a clock.
func slowRedis(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					name, err := readCommand(r)
					if err != nil {
						return
					}
					reply := "+PONG\r\n"
					if strings.EqualFold(name, "HELLO") { // at once: an old Redis, RESP2
						reply = "-ERR unknown command 'HELLO'\r\n"
					} else {
						<-release
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// readCommand reads one RESP array of bulk strings and returns its first.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return "", err
	}
	var name string
	for i := range 2 * n { // $len, then the bytes
		b, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if i == 1 {
			name = strings.TrimSpace(b)
		}
	}
	return name, nil
}

// A call on a request's path is cut at the call timeout; a bulk call (a
// walk's worth of data: a fleet's snapshot, the feed's append) waits for
// the same slow Redis up to the bulk timeout and succeeds: before, the
// sockets' read timeout was the call timeout, so a brand's append of
// 50,000 events on a busy machine timed out on every walk and no event
// reached the fleet's feed (docs/scaling.md).
func TestBulkCallsOutlastTheCallTimeout(t *testing.T) {
	release := make(chan struct{})
	c, err := New(Config{URL: "redis://" + slowRedis(t, release),
		Guard: GuardConfig{CallTimeout: 50 * time.Millisecond, BulkTimeout: time.Minute, ConsecutiveFailures: 100}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ping := func(ctx context.Context, rdb redis.UniversalClient) error { return rdb.Ping(ctx).Err() }

	if err := c.Do(t.Context(), ping); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a call to a Redis that does not answer: %v; want ErrUnavailable at the call timeout", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.DoBulk(t.Context(), ping) }()
	// Held past the call timeout: answered only when the test lets it.
	select {
	case err := <-done:
		t.Fatalf("the bulk call ended before Redis answered: %v", err)
	case <-time.After(200 * time.Millisecond): // four call timeouts: it waits on
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("a bulk call answered after four call timeouts: %v; want it to succeed", err)
	}
}

func TestBulkTimeoutDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   GuardConfig
		want time.Duration
	}{
		{GuardConfig{}, DefaultBulkTimeout},
		{GuardConfig{CallTimeout: time.Minute}, time.Minute}, // never less than a call's
		{GuardConfig{BulkTimeout: 3 * time.Second}, 3 * time.Second},
	} {
		if cfg, err := tc.in.withDefaults(); err != nil || cfg.BulkTimeout != tc.want {
			t.Errorf("%+v: bulk timeout %v, %v; want %v", tc.in, cfg.BulkTimeout, err, tc.want)
		}
	}
	if _, err := NewGuard(GuardConfig{BulkTimeout: -time.Second}, nil, nil); err == nil {
		t.Error("a negative bulk timeout: guard made, want an error")
	}
}
