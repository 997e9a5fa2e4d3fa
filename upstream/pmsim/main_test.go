package pmsim

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (a delayed handler, a timer,
// a connection) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
