package driver_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestRecoverExitedTaskLeavesItsPort: after an agent restart Nomad also
// recovers the task of an allocation it stopped and has not collected
// yet. Its KV port may belong to a running shard by then (ports are
// reused from the client's range); recovering the exited task first must
// not bind it, or the running shard recovered next loses its KV events;
// nor emit events for it after the end Nomad recorded.
func TestRecoverExitedTaskLeavesItsPort(t *testing.T) {
	tcp := map[string]any{"kv_transport": "tcp"} // ports are what this is about
	h1 := launchWith(t, simBin, tcp)
	kvTask := map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}}
	old := newTask(t, h1, kvTask)
	oldHandle := start(t, h1, old.Config)
	stop(t, h1, old.Config.GetId())
	live := newTask(t, h1, kvTask)
	liveHandle := start(t, h1, live.Config)
	liveID := live.Config.GetId()
	port := inspect(t, h1, liveID).GetDriver().GetAttributes()["kv_port"]
	// The stopped task's state names the port the running shard holds now.
	var st driver.TaskState
	if err := json.Unmarshal(oldHandle.GetDriverState(), &st); err != nil {
		t.Fatal(err)
	}
	st.KVPort, _ = strconv.Atoi(port)
	stale := proto.Clone(oldHandle).(*drivers.TaskHandle)
	var err error
	if stale.DriverState, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := h1.Crash(); err != nil {
		t.Fatal(err)
	}

	h2 := launchWith(t, simBin, tcp)
	ev := watchEvents(t, h2)
	all := watchEvents(t, h2)
	for _, hd := range []*drivers.TaskHandle{stale, liveHandle} {
		hd = proto.Clone(hd).(*drivers.TaskHandle)
		hd.Config.MsgpackDriverConfig = nil
		if _, err := h2.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: hd}); err != nil {
			t.Fatal(err)
		}
	}
	stopped := h2.WaitAsync(ctx(t), old.Config.GetId())
	h2.WaitAsync(ctx(t), liveID)
	e := ev.next(t, "KV events")
	if e.GetTaskId() != liveID || !strings.HasPrefix(e.GetMessage(), "KV events resumed on port "+port) {
		t.Errorf("first KV event %q of task %s; want the running shard's %q", e.GetMessage(), e.GetTaskId(), "KV events resumed on port "+port)
	}
	if got := inspect(t, h2, liveID).GetDriver().GetAttributes()["kv_port"]; got != port {
		t.Errorf("running shard's kv_port %q after recovery; want %s", got, port)
	}
	if w := <-stopped; w.Err != nil || w.Resp.GetResult() == nil {
		t.Errorf("wait on the stopped task: %v, %v; want its recorded exit", w.Resp, w.Err)
	}
	// Nomad recorded the stopped task's end ("Killed") before the restart:
	// neither "recovered" nor "engine exited" may follow it.
	for _, e := range all.until(t, marker(t, h2)) {
		if e.GetTaskId() == old.Config.GetId() {
			t.Errorf("event %q for the task that had exited before the restart; want none", e.GetMessage())
		}
	}
}
