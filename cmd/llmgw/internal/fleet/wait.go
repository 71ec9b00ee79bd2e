package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errRetry marks a condition that does not hold yet: poll tries again.
var errRetry = errors.New("not yet")

// notYet is a reason to poll again, kept for the timeout message.
func notYet(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRetry, fmt.Sprintf(format, args...))
}

// pollEvery is how often poll re-checks a condition.
const pollEvery = 25 * time.Millisecond

// poll calls cond until it returns nil. An error wrapping errRetry means
// "again"; any other error ends the wait at once. It gives up when ctx ends
// or after timeout, naming what it waited for and the last reason.
func poll(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errRetry) {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %v)", what, ctx.Err(), err)
		case <-deadline.C:
			return fmt.Errorf("%s: not within %s (last: %v)", what, timeout, err)
		case <-tick.C:
		}
	}
}
