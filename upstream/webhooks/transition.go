package webhooks

import "time"

// The changes of an endpoint's state, made alike by every store (the
// store in EDGE_DATA_DIR, a fleet's in Redis): each returns a change that
// reports whether it altered e, or ErrConflict when e is no longer enabled
// at the position the writer read (docs/webhooks.md, "The seams").

// Progressed moves an endpoint enabled at from to p.
func Progressed(from string, p Progress) func(e *Endpoint) (bool, error) {
	return func(e *Endpoint) (bool, error) {
		if err := enabledAt(e, from); err != nil {
			return false, err
		}
		e.Progress = p
		return true, nil
	}
}

// Disabled disables an endpoint enabled at from, for reason, at at; its
// position is kept, its failures forgotten.
func Disabled(from, reason string, at time.Time) func(e *Endpoint) (bool, error) {
	return func(e *Endpoint) (bool, error) {
		if err := enabledAt(e, from); err != nil {
			return false, err
		}
		e.Status, e.DisabledReason, e.DisabledAt = StatusDisabled, reason, at
		e.Failures, e.NextAttempt = 0, time.Time{}
		return true, nil
	}
}

// Enabled enables a disabled endpoint from after; an enabled one is left
// as it is.
func Enabled(after string) func(e *Endpoint) (bool, error) {
	return func(e *Endpoint) (bool, error) {
		if e.Status == StatusEnabled {
			return false, nil
		}
		e.Status, e.DisabledReason, e.DisabledAt = StatusEnabled, "", time.Time{}
		e.Progress = Progress{After: after}
		return true, nil
	}
}

// enabledAt refuses an endpoint not enabled at position from.
func enabledAt(e *Endpoint, from string) error {
	if e.Status != StatusEnabled || e.After != from {
		return ErrConflict
	}
	return nil
}
