package fleet

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// This file holds the fleet's half of a fault: bringing back what
// fault.go killed, the way Nomad (or Consul's own data dir) would. None
// of them waits for the routers to route exact again: a fault run
// measures that itself, with WaitExact.

// RestartShard plays Nomad's restart of shard i's task after its engine
// or supervisor died (the jobspec's restart block): once the driver reports
// the task exited, its service is deregistered (Nomad's service hook does
// that on exit), the dead task destroyed, and the task started again in
// the same allocation, with a new invocation id, on the same ports, so
// its replica id (<alloc id>/<task>) stays. It returns once the engine
// serves and its service is registered again.
func (f *Fleet) RestartShard(ctx context.Context, i int) error {
	f.op.Lock()
	defer f.op.Unlock()
	s, err := f.shardAt(i)
	if err != nil {
		return fmt.Errorf("restart shard %d: %w", i, err)
	}
	if s.stopped {
		return fmt.Errorf("restart shard %d: it was stopped", i)
	}
	err = poll(ctx, shardReadyTimeout, "the task of "+s.replica+" to exit", func() error {
		r, err := f.driver.Driver.InspectTask(ctx, &drivers.InspectTaskRequest{TaskId: s.taskID})
		if err != nil {
			return fmt.Errorf("inspect task: %w", err)
		}
		if st := r.GetTask().GetState(); st != drivers.TaskState_EXITED {
			return notYet("the task is %v", st)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("restart shard %d: %w", i, err)
	}
	if err := f.deregister(ctx, s); err != nil {
		return fmt.Errorf("restart shard %d: %w", i, err)
	}
	if _, err := f.driver.Driver.DestroyTask(ctx, &drivers.DestroyTaskRequest{TaskId: s.taskID, Force: true}); err != nil {
		return fmt.Errorf("restart shard %d: destroy the exited task: %w", i, err)
	}
	f.killEngine(s) // the driver killed its group; make sure
	s.task.Config.Id = s.allocID + "/" + s.task.Config.GetName() + "/" + randomHex(4)
	resp, err := f.driver.Driver.StartTask(ctx, &drivers.StartTaskRequest{Task: s.task.Config})
	if err != nil {
		return fmt.Errorf("restart shard %d: start task: %w", i, err)
	}
	s.taskID, s.handle, s.enginePid = s.task.Config.GetId(), resp.GetHandle(), 0
	return f.waitShardReady(ctx, s)
}

// RestartDriver starts the driver plugin again after KillDriver, with the
// same plugin config, and recovers every running shard's task from the
// handle StartTask returned, as a restarted Nomad client does from its
// state (RecoverTask; the handle's encoded task config is dropped, as
// across an agent restart). It returns once every task is recovered.
func (f *Fleet) RestartDriver(ctx context.Context) error {
	f.op.Lock()
	defer f.op.Unlock()
	if f.driver != nil && !f.driver.Exited() {
		return errors.New("restart driver: the plugin still runs")
	}
	h, err := f.launchDriver(ctx)
	if err != nil {
		return fmt.Errorf("restart driver: %w", err)
	}
	f.driver = h
	for _, s := range f.runningShards() {
		hd := proto.Clone(s.handle).(*drivers.TaskHandle)
		hd.Config.MsgpackDriverConfig = nil
		if _, err := h.Driver.RecoverTask(ctx, &drivers.RecoverTaskRequest{Handle: hd}); err != nil {
			return fmt.Errorf("restart driver: recover task %s: %w", s.replica, err)
		}
	}
	return nil
}

// RestartRouter starts a router in place of router i after KillRouter, as
// Nomad replaces a failed allocation: the dead one's stale registration
// goes, and the new one, with a new name and the same scheduler and
// router HCL, registers itself. It returns once the new router's check
// passes.
func (f *Fleet) RestartRouter(ctx context.Context, i int) error {
	f.op.Lock()
	defer f.op.Unlock()
	f.mu.Lock()
	if i < 0 || i >= len(f.routers) || !f.routers[i].killed {
		f.mu.Unlock()
		return fmt.Errorf("restart router %d: no killed router there", i)
	}
	old := f.routers[i]
	f.gen++
	name, rt := fmt.Sprintf("router-%d-%d", f.gen, i), f.routing
	f.mu.Unlock()
	f.cat.routerDown(ctx, old)
	r, err := f.startRouter(ctx, name, rt)
	if err != nil {
		return fmt.Errorf("restart router %d: %w", i, err)
	}
	f.mu.Lock()
	f.routers[i] = r
	f.mu.Unlock()
	return nil
}

// RestartConsul starts the Consul agent again after KillConsul, on the
// same ports and data dir, and returns once it leads; the services it
// held come back from its data dir.
func (f *Fleet) RestartConsul(ctx context.Context) error {
	f.op.Lock()
	defer f.op.Unlock()
	if f.consul == nil {
		return errors.New("restart consul: the fleet runs no consul agent")
	}
	return f.consul.restart(ctx)
}

// WaitExact returns once every live router routes every running shard in
// exact mode, or fails after a minute.
func (f *Fleet) WaitExact(ctx context.Context) error { return f.waitExact(ctx) }

// RouterPIDs are the live routers' process ids, in RouterURLs order.
func (f *Fleet) RouterPIDs() []int {
	var out []int
	for _, r := range f.liveRouters() {
		out = append(out, r.p.pid())
	}
	return out
}

// DriverPID is the driver plugin's process id (0 when none runs).
func (f *Fleet) DriverPID() int {
	f.op.Lock()
	defer f.op.Unlock()
	if f.driver == nil {
		return 0
	}
	return f.driver.Pid()
}
