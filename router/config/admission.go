package config

import (
	"fmt"
	"strconv"
)

// The admission queue's settings (router/admission): queue_timeout,
// max_queue and max_queue_per_tenant. A request that finds every replica
// of its model over its busy threshold waits up to queue_timeout in its
// tenant's queue; max_queue bounds the waiters of every tenant together
// and max_queue_per_tenant one tenant's, so that a tenant sending far more
// than the others cannot fill the queue and turn theirs away at once.
// Over either cap the router answers 429 at once.

func (c *Config) validateAdmission() []error {
	var errs []error
	if c.QueueTimeout < 0 || c.MaxQueue < 0 {
		errs = append(errs, fmt.Errorf("queue_timeout %s and max_queue %d must not be negative", c.QueueTimeout, c.MaxQueue))
	}
	if c.MaxQueuePerTenant < 0 || c.MaxQueue > 0 && c.MaxQueuePerTenant > c.MaxQueue {
		errs = append(errs, fmt.Errorf("max_queue_per_tenant %d: want 0 (max_queue) to max_queue (%d)", c.MaxQueuePerTenant, c.MaxQueue))
	}
	return errs
}

// integer sets an int setting from its decimal text.
func integer(name string, f func(c *Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s %q: want an integer", name, v)
		}
		*f(c) = n
		return nil
	}
}
