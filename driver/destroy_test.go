package driver_test

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestDestroyRunning: a forced destroy of a running shard (Nomad's path
// when recovery fails) kills its whole group at once, without a stop
// timeout, and forgets the task.
func TestDestroyRunning(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	pid := enginePid(t, h, id)
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id}); err == nil {
		t.Error("destroying a running task without force succeeded")
	}
	if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the shard's group to vanish", func() bool { return pluginhost.GroupGone(pid) })
	for _, e := range ev.until(t, marker(t, h)) {
		if strings.Contains(e.GetMessage(), "did not stop") {
			t.Errorf("forced destroy reported a stop timeout: %q", e.GetMessage())
		}
	}
}
