package pluginhost

import (
	"context"
	"sync"

	"google.golang.org/grpc"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// handlers is the set of tasks Nomad's client would have an event handler
// for, by allocation id and task name (see Events).
type handlers struct {
	mu  sync.Mutex // guards set
	set map[[2]string]bool
}

func (s *handlers) register(cfg *drivers.TaskConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[[2]string]bool{}
	}
	s.set[[2]string{cfg.GetAllocId(), cfg.GetName()}] = true
}

func (s *handlers) has(alloc, task string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set[[2]string{alloc, task}]
}

// recoveredWithoutHandler notes a task RecoverTask took back: it gets its
// event handler with the next call for it.
func (d *trackingDriver) recoveredWithoutHandler(h *drivers.TaskHandle) {
	id := h.GetConfig().GetId()
	if id == "" || d.handlers.has(h.GetConfig().GetAllocId(), h.GetConfig().GetName()) {
		return // a reattached plugin's own task, or one started here
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recovered == nil {
		d.recovered = map[string]bool{}
	}
	d.recovered[id] = true
}

// called registers task id's event handler if it was recovered without
// one: Nomad calls a task only from its runner, once the handler exists.
func (d *trackingDriver) called(id string) {
	d.mu.Lock()
	ok := d.recovered[id]
	delete(d.recovered, id)
	cfg := d.handles[id].GetConfig()
	d.mu.Unlock()
	if ok {
		d.handlers.register(cfg)
	}
}

func (d *trackingDriver) WaitTask(ctx context.Context, in *drivers.WaitTaskRequest, opts ...grpc.CallOption) (*drivers.WaitTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.WaitTask(ctx, in, opts...)
}

func (d *trackingDriver) StopTask(ctx context.Context, in *drivers.StopTaskRequest, opts ...grpc.CallOption) (*drivers.StopTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.StopTask(ctx, in, opts...)
}

func (d *trackingDriver) DestroyTask(ctx context.Context, in *drivers.DestroyTaskRequest, opts ...grpc.CallOption) (*drivers.DestroyTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.DestroyTask(ctx, in, opts...)
}

func (d *trackingDriver) InspectTask(ctx context.Context, in *drivers.InspectTaskRequest, opts ...grpc.CallOption) (*drivers.InspectTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.InspectTask(ctx, in, opts...)
}

func (d *trackingDriver) TaskStats(ctx context.Context, in *drivers.TaskStatsRequest, opts ...grpc.CallOption) (drivers.Driver_TaskStatsClient, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.TaskStats(ctx, in, opts...)
}

func (d *trackingDriver) SignalTask(ctx context.Context, in *drivers.SignalTaskRequest, opts ...grpc.CallOption) (*drivers.SignalTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.SignalTask(ctx, in, opts...)
}

func (d *trackingDriver) ExecTask(ctx context.Context, in *drivers.ExecTaskRequest, opts ...grpc.CallOption) (*drivers.ExecTaskResponse, error) {
	d.called(in.GetTaskId())
	return d.DriverClient.ExecTask(ctx, in, opts...)
}
