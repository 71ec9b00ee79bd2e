package fleet

import (
	"context"
	"errors"
	"fmt"
)

// RestartShards replaces every running shard by a new one, as many as
// ran, with roles as Options.Roles gives them (nil: all aggregated): the
// old ones are deregistered, stopped and destroyed through the driver, the
// new ones started and registered once they serve. It is for runs that
// compare fleets of one size in other roles (llmgw bench's disaggregated
// policy), between runs: it does not drain, so requests in flight fail.
// Restart the routers after it (RestartRouters) so that their views start
// from the new shards.
func (f *Fleet) RestartShards(ctx context.Context, roles []string) error {
	f.op.Lock()
	defer f.op.Unlock()
	old := f.runningShards()
	o := f.o
	o.Shards, o.Roles = len(old), roles
	if err := o.validRoles(); err != nil {
		return err
	}
	f.mu.Lock()
	for _, s := range old {
		s.stopped = true
	}
	f.shards = nil
	f.o.Roles = roles
	f.mu.Unlock()
	// Every old shard is stopped, whatever failed for another: the fleet
	// no longer lists them, so Close would not.
	var errs []error
	for _, s := range old {
		errs = append(errs, f.deregister(ctx, s), f.stopTask(ctx, s))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restart shards: %w", err)
	}
	if err := f.startShards(ctx, o.Shards); err != nil {
		return fmt.Errorf("restart shards: %w", err)
	}
	return nil
}
