package admission

import "context"

// Reap is one pass over the models: it stops each whose idle time has
// passed since its last request here and since any router was last seen
// with one in flight to its replicas, and that no request waits for,
// and refreshes what the status page shows of those not warm. It
// returns the models whose count its Stop calls moved to zero.
//
// Routers share in-flight counts (router/peers), not request times, so a
// peer's request that begins and ends between two of its load messages
// goes unseen here: a model that only such short requests keep busy on
// other routers may be stopped, and its next request waits for a start.
// Of routers that reap at once one moves the count, and none stops a
// model another router has just started (Starter.Stop).
func (c *Cold) Reap(ctx context.Context) []string {
	var stopped []string
	for _, name := range c.Models() {
		m := c.models[name]
		if c.o.InFlight != nil && c.o.InFlight(name) {
			c.touch(m)
			continue
		}
		if !c.o.Ready(name) {
			c.refresh(ctx, m)
		}
		if !c.idle(m) {
			continue
		}
		last, start := m.last.Load(), c.o.Now()
		changed, err := c.o.Starter.Stop(ctx, name)
		c.scaled(name, "down", changed, err)
		c.stage(ctx, Stage{Model: name, Name: "scale_down", Start: start, Took: c.o.Now().Sub(start), Changed: changed, Err: err})
		if err != nil {
			continue
		}
		// A request that came during the call may have started the model
		// again: then it is not stopped, and its idle time runs.
		if m.last.Load() == last {
			m.stopped.Store(true)
			c.mu.Lock()
			m.asked = false
			c.mu.Unlock()
		}
		if changed {
			stopped = append(stopped, name)
		}
	}
	return stopped
}

// refresh reads whether m's job asks for replicas, for State, unless a
// request is starting it.
func (c *Cold) refresh(ctx context.Context, m *coldModel) {
	c.mu.Lock()
	busy := m.starting || m.waiting > 0
	c.mu.Unlock()
	if busy {
		return
	}
	n, err := c.o.Starter.Count(ctx, m.name)
	if err != nil {
		return
	}
	c.mu.Lock()
	m.asked = n > 0
	c.mu.Unlock()
}

// idle reports whether m is due to stop.
func (c *Cold) idle(m *coldModel) bool {
	now := c.o.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	return m.idle > 0 && !m.stopped.Load() && !m.starting && m.waiting == 0 && now.UnixNano()-m.last.Load() >= int64(m.idle)
}
