package redishooks

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// do is Client.Do, its "Redis is away" errors (redisconn.ErrUnavailable:
// down, breaker open, writes refused) also webhooks.ErrStoreUnavailable:
// the client has logged them, the deliverer waits without a warning.
func do(ctx context.Context, c *redisconn.Client, fn func(context.Context, redis.UniversalClient) error) error {
	err := c.Do(ctx, fn)
	if errors.Is(err, redisconn.ErrUnavailable) {
		return fmt.Errorf("%w: %w", webhooks.ErrStoreUnavailable, err)
	}
	return err
}
