package edge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// problemOf is the one place an error becomes a problem: the edge's own
// problems pass, domain errors of upstream map by kind, anything else is an
// internal fault whose text never reaches the partner, and a cancellation
// of a request whose partner left answers nothing.
func TestProblemOf(t *testing.T) {
	secret := errors.New("dial tcp 10.0.0.1:8443: connect: connection refused (pms.internal secret)")
	own := problem.New(problem.PropertyNotFound, "No such property.")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name       string
		ctx        context.Context
		err        error
		want       problem.Code
		retryAfter time.Duration
	}{
		{"own problem", nil, own, problem.PropertyNotFound, 0},
		{"own problem wrapped twice", nil, fmt.Errorf("a: %w", fmt.Errorf("b: %w", own)), problem.PropertyNotFound, 0},
		{"not found", nil, &upstream.Error{Kind: upstream.NotFound, Err: secret}, problem.PropertyNotFound, 0},
		{"unavailable", nil, &upstream.Error{Kind: upstream.Unavailable, RetryAfter: 3 * time.Second, Err: secret}, problem.ServiceUnavailable, 3 * time.Second},
		{"timeout", nil, fmt.Errorf("load: %w", &upstream.Error{Kind: upstream.Timeout, Err: secret}), problem.GatewayTimeout, 0},
		{"bad gateway", nil, &upstream.Error{Kind: upstream.BadGateway, Err: secret}, problem.BadGateway, 0},
		{"bare deadline", nil, context.DeadlineExceeded, problem.GatewayTimeout, 0},
		{"cancelled, partner still here", nil, &upstream.Error{Kind: upstream.Canceled, Err: secret}, problem.ServiceUnavailable, 0},
		{"plain Go error", nil, secret, problem.InternalError, 0},
		{"nil", nil, nil, problem.InternalError, 0},
		{"typed nil *problem.Error", nil, fmt.Errorf("load: %w", (*problem.Error)(nil)), problem.InternalError, 0},
		{"unknown code", nil, &problem.Error{Code: "NOPE", Err: secret}, problem.InternalError, 0},
		{"unknown kind", nil, &upstream.Error{Kind: 99, Err: secret}, problem.InternalError, 0},
	} {
		ctx := tc.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		pe, cause, gone := problemOf(ctx, tc.err)
		if gone || pe == nil || pe.Code != tc.want || pe.RetryAfter != tc.retryAfter {
			t.Errorf("%s: %+v (gone %v), want %s, RetryAfter %v", tc.name, pe, gone, tc.want, tc.retryAfter)
			continue
		}
		if strings.HasPrefix(tc.name, "own") {
			if pe != own {
				t.Errorf("%s: %p, want the same *problem.Error %p", tc.name, pe, own)
			}
			continue
		}
		if strings.Contains(pe.Detail, "secret") || strings.Contains(pe.Detail, "10.0.0.1") {
			t.Errorf("%s: detail %q carries the cause", tc.name, pe.Detail)
		}
		if cause == nil || pe.Err == nil {
			t.Errorf("%s: cause lost for the log: %v, %v", tc.name, cause, pe.Err)
		}
		if errors.Is(tc.err, secret) && !errors.Is(pe, secret) {
			t.Errorf("%s: %v does not wrap the cause", tc.name, pe)
		}
	}
	// The partner left: nothing is answered, the cause is kept.
	pe, cause, gone := problemOf(cancelled, &upstream.Error{Kind: upstream.Canceled, Err: context.Canceled})
	if !gone || pe != nil || upstream.KindOf(cause) != upstream.Canceled {
		t.Errorf("partner gone: %+v, %v, gone %v", pe, cause, gone)
	}
	pe, _, gone = problemOf(cancelled, context.Canceled)
	if !gone || pe != nil {
		t.Errorf("partner gone, bare context error: %+v, gone %v", pe, gone)
	}
	// An own problem is answered even when the partner left (its write
	// fails quietly): only domain errors can mean "gone".
	if pe, _, gone := problemOf(cancelled, own); gone || pe != own {
		t.Errorf("own problem under a cancelled context: %+v, gone %v", pe, gone)
	}
}
