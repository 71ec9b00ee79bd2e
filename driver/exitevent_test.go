package driver_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

func exitEvents(evs []*drivers.DriverTaskEvent, id string) []*drivers.DriverTaskEvent {
	var out []*drivers.DriverTaskEvent
	for _, e := range evs {
		if e.GetTaskId() == id && strings.HasPrefix(e.GetMessage(), "engine exited") {
			out = append(out, e)
		}
	}
	return out
}

// TestExitEvents: an exit Nomad asked for (StopTask, a forced
// DestroyTask) emits no Driver event, since Nomad may have dropped the
// task's event handler by then (`job stop -purge`) and records the kill
// itself; an exit it did not ask for does, before WaitTask answers.
func TestExitEvents(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	cfg := map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}}

	stopped := newTask(t, h, cfg)
	start(t, h, stopped.Config)
	ev.next(t, "model ready")
	if _, err := h.Driver.StopTask(ctx(t), &drivers.StopTaskRequest{TaskId: stopped.Config.GetId(), Timeout: durationpb.New(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	destroyed := newTask(t, h, cfg)
	start(t, h, destroyed.Config)
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: destroyed.Config.GetId(), Force: true}); err != nil {
		t.Fatal(err)
	}
	evs := ev.until(t, marker(t, h))
	for _, id := range []string{stopped.Config.GetId(), destroyed.Config.GetId()} {
		if got := exitEvents(evs, id); len(got) != 0 {
			t.Errorf("task %s, stopped by Nomad: exit events %v; want none", id, got)
		}
	}

	crashed := newTask(t, h, cfg)
	id := crashed.Config.GetId()
	start(t, h, crashed.Config)
	waited := h.WaitAsync(ctx(t), id)
	if err := syscall.Kill(enginePid(t, h, id), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if w := <-waited; w.Err != nil || w.Resp.GetResult().GetSignal() != int32(syscall.SIGKILL) {
		t.Fatalf("wait %v, %v; want SIGKILL", w.Resp, w.Err)
	}
	got := exitEvents(ev.until(t, marker(t, h)), id)
	if len(got) != 1 || got[0].GetAnnotations()["signal"] != "9" {
		t.Errorf("exit events of the killed engine %v; want one, signal 9", got)
	}
	stop(t, h, id)
}
