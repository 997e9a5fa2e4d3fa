package webhooks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory is a Registry in this process's memory: endpoints and progress
// are lost with it (a single edge without EDGE_DATA_DIR, tests). Its zero
// value is empty and ready.
type Memory struct {
	mu  sync.Mutex
	eps []Endpoint // in order of creation
}

var _ Registry = (*Memory)(nil)

func (m *Memory) find(id string) int {
	return slices.IndexFunc(m.eps, func(e Endpoint) bool { return e.ID == id })
}

// Endpoints implements Store.
func (m *Memory) Endpoints(context.Context) ([]Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.eps), nil
}

// Endpoint implements Store.
func (m *Memory) Endpoint(_ context.Context, id string) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.find(id); i >= 0 {
		return m.eps[i], nil
	}
	return Endpoint{}, ErrNotFound
}

// enabledAt is the index of the enabled endpoint id whose After is from.
func (m *Memory) enabledAt(id, from string) (int, error) {
	i := m.find(id)
	switch {
	case i < 0:
		return -1, ErrNotFound
	case m.eps[i].Status != StatusEnabled || m.eps[i].After != from:
		return -1, ErrConflict
	}
	return i, nil
}

// SetProgress implements Store.
func (m *Memory) SetProgress(_ context.Context, id, from string, p Progress) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.enabledAt(id, from)
	if err == nil {
		m.eps[i].Progress = p
	}
	return err
}

// Disable implements Store.
func (m *Memory) Disable(_ context.Context, id, from, reason string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, err := m.enabledAt(id, from)
	if err == nil {
		e := &m.eps[i]
		e.Status, e.DisabledReason, e.DisabledAt = StatusDisabled, reason, at
		e.Failures, e.NextAttempt = 0, time.Time{}
	}
	return err
}

// Create implements Registry.
func (m *Memory) Create(_ context.Context, ep Endpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.find(ep.ID) >= 0 {
		return errIDTaken(ep.ID)
	}
	n := 0
	for _, e := range m.eps {
		if e.KeyID != ep.KeyID {
			continue
		}
		if e.URL == ep.URL {
			return ErrExists
		}
		n++
	}
	if n >= MaxPerKey {
		return ErrLimit
	}
	ep.Status, ep.DisabledReason, ep.DisabledAt = StatusEnabled, "", time.Time{}
	m.eps = append(m.eps, ep)
	return nil
}

// List implements Registry.
func (m *Memory) List(_ context.Context, keyID string) ([]Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Endpoint
	for _, e := range m.eps {
		if e.KeyID == keyID {
			out = append(out, e)
		}
	}
	return out, nil
}

// Delete implements Registry.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return ErrNotFound
	}
	m.eps = slices.Delete(m.eps, i, i+1)
	return nil
}

// Enable implements Registry.
func (m *Memory) Enable(_ context.Context, id, after string) (Endpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.find(id)
	if i < 0 {
		return Endpoint{}, ErrNotFound
	}
	e := &m.eps[i]
	if e.Status != StatusEnabled {
		e.Status, e.DisabledReason, e.DisabledAt = StatusEnabled, "", time.Time{}
		e.Progress = Progress{After: after}
	}
	return *e, nil
}

// errIDTaken refuses a second endpoint with an id in use: ids are random
// (whe_ and 128 bits), so it is a fault of the caller, never a partner's
// error (not ErrExists, which names a URL).
func errIDTaken(id string) error {
	return fmt.Errorf("webhooks: endpoint id %s is in use", id)
}
