package driver_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// until collects events up to the first one of task id, which a test
// starts after what it checks: the driver sends all events on one stream,
// in order, so everything emitted before that task started has arrived.
func (e *events) until(t *testing.T, id string) []*drivers.DriverTaskEvent {
	t.Helper()
	var out []*drivers.DriverTaskEvent
	timeout := time.After(poll.Timeout)
	for {
		ev, ok := e.take(timeout)
		if !ok {
			t.Fatalf("no event of marker task %s", id)
		}
		if ev.GetTaskId() == id {
			return out
		}
		out = append(out, ev)
	}
}

// marker starts a task whose first event marks a point in the stream.
func marker(t *testing.T, h *pluginhost.Host) string {
	t.Helper()
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	start(t, h, task.Config)
	t.Cleanup(func() { stop(t, h, task.Config.GetId()) })
	return task.Config.GetId()
}

// TestDriverRestartsAreNotSeenRestarts: vllm-sim answers /health at the
// driver's first poll, milliseconds after it starts, so the KV watcher
// takes its baseline at once. The reset the driver itself announces for a
// new engine (a first start, and a restart that reuses the replica's
// listener) must never count as a restart the listener saw: only those
// are reported as "restart seen ... its blocks were cleared". The blocks
// the new engine publishes afterwards must survive that reset.
func TestDriverRestartsAreNotSeenRestarts(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	url := engineURL(task)
	check := func(id, what string) {
		t.Helper()
		ev.next(t, "model ready")
		complete(t, url, strings.Repeat("alpha beta gamma delta "+what+" ", 12))
		attrs := func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }
		waitInSync(t, attrs, url) // the reset came first: the new blocks are all there
		if got := attrs()["kv_restarts"]; got != "0" {
			t.Errorf("%s: kv_restarts %q; want 0, the driver announced this engine", what, got)
		}
	}
	first := task.Config.GetId()
	start(t, h, task.Config)
	check(first, "first start")

	if err := syscall.Kill(enginePid(t, h, first), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: first}); err != nil {
		t.Fatal(err)
	}
	again := proto.Clone(task.Config).(*drivers.TaskConfig)
	again.Id = again.GetAllocId() + "/" + again.GetName() + "/restart1"
	start(t, h, again)
	ev.next(t, "restart seen: keeping")
	check(again.GetId(), "restart")
	for _, e := range ev.until(t, marker(t, h)) {
		if strings.Contains(e.GetMessage(), "blocks were cleared") {
			t.Errorf("event %q for a driver-announced engine", e.GetMessage())
		}
	}
	stop(t, h, again.GetId())
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: first, Force: true}); err != nil {
		t.Fatal(err)
	}
}
