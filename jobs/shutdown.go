package jobs

import (
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// shutdownDelays checks that every Consul service of group g leaves the
// catalog a while before the process behind it is signalled: Nomad
// deregisters a task's services, waits the task's shutdown_delay (the
// group's for group services), and only then sends the kill signal. Without
// a delay the signal and the deregistration race, and routers (or clients
// resolving Consul DNS) still send requests to a replica or router that is
// shutting down. Nomad warns about the same services.
func (c *checker) shutdownDelays(g *hclsyntax.Block) {
	group := label(g)
	groupDelay := c.delay(g.Body)
	anyTaskDelay := false
	scoped := map[string]bool{} // tasks that group services name with task = "..."
	var unscoped []*hclsyntax.Block
	for _, s := range blocks(g.Body, "service") {
		if t, ok := stringAttr(s.Body, "task"); ok {
			scoped[t] = true
		} else {
			unscoped = append(unscoped, s)
		}
	}
	for _, t := range blocks(g.Body, "task") {
		if c.delay(t.Body) {
			anyTaskDelay = true
			continue
		}
		switch {
		case len(blocks(t.Body, "service")) > 0:
			c.add(t.DefRange(), "task %q: defines a service but no shutdown_delay; set one so Nomad deregisters the service before it signals the task, and routers stop sending first", label(t))
		case scoped[label(t)]:
			c.add(t.DefRange(), "task %q: a group service names it, but it has no shutdown_delay; set one so Nomad deregisters the service before it signals the task", label(t))
		}
	}
	if len(unscoped) > 0 && !groupDelay && !anyTaskDelay {
		c.add(unscoped[0].DefRange(), "group %q: defines a service, but neither the group nor a task has a shutdown_delay; set one so Nomad deregisters the service before it signals the tasks", group)
	}
}

// delay reports whether body sets shutdown_delay, and checks a constant
// value: a duration above zero (a value from a variable counts as set).
func (c *checker) delay(body *hclsyntax.Body) bool {
	a, ok := body.Attributes["shutdown_delay"]
	if !ok {
		return false
	}
	s, ok := stringAttr(body, "shutdown_delay")
	if !ok {
		return true
	}
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		c.add(a.Expr.Range(), "shutdown_delay %s: want a duration above zero, such as \"5s\"", strconv.Quote(s))
		return false
	}
	return true
}
