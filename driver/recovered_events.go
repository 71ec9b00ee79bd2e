package driver

// Events of a recovered task wait for Nomad's handler.
//
// Nomad's client looks a driver event's handler up when the event arrives
// (drivermanager's instanceManager.handleEvent asks Client.GetTaskEventHandler
// for the event's allocation and task) and drops an event that has none,
// logging "no handler registered for event". After an agent restart the
// allocation has no handler while its tasks are recovered:
// Client.restoreState adds the allocation runner to the client's
// allocations only once allocRunner.Restore, whose task runners call
// RecoverTask, has returned, and runs the runners after every allocation
// is restored. So whatever the driver emits during RecoverTask, or right
// after it, would be lost. The driver holds a recovered task's events
// instead, and sends them once Nomad makes its first call for the task
// (WaitTask from the task runner's run loop, TaskStats, InspectTask, ...):
// by then the handler exists.

// heldPerTask bounds the events held for one recovered task; the oldest go
// first. A recovery emits two or three.
const heldPerTask = 32

// hold starts holding task id's events until release.
func (b *eventBus) hold(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.held[id]; !ok {
		b.held[id] = nil
	}
}

// release sends task id's held events, in order, and stops holding them.
// It is cheap for a task whose events are not held.
func (b *eventBus) release(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.held[id]
	if !ok {
		return
	}
	delete(b.held, id)
	for _, ev := range q {
		b.send(ev)
	}
}

// task is the handle of task id for one of Nomad's calls about it: the
// call says Nomad handles the task's events now, so any held for it are
// sent.
func (d *Driver) task(id string) (*taskHandle, bool) {
	d.events.release(id)
	return d.tasks.get(id)
}
