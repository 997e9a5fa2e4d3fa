package webhooks_test

import (
	"testing"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/webhookstest"
)

// TestMemoryContract: Memory answers as every store must
// (webhookstest.StoreContract).
func TestMemoryContract(t *testing.T) {
	webhookstest.StoreContract(t, func(*testing.T) webhooks.Registry { return &webhooks.Memory{} })
}
