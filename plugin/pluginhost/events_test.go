package pluginhost_test

import (
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestEventHandlersAsNomad: a started task's events are delivered; an
// event the plugin sends while it recovers a task (here a recovery that
// fails, so Nomad never gets a handler for it from the recovery) is
// dropped, as Nomad's client drops it. The test driver sends its events
// in order on one stream, so once a later task's event is delivered the
// earlier one has arrived too.
func TestEventHandlersAsNomad(t *testing.T) {
	h1 := launch(t)
	started := startSleeper(t, h1, "first")

	h2 := launch(t)
	ev := h2.WatchEvents()
	t.Cleanup(ev.Close)
	if _, err := h2.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: started}); err == nil {
		t.Fatal("the test driver recovered a task it did not start")
	}
	startSleeper(t, h2, "second")

	var delivered, dropped []string
	ok := poll.Within(poll.Timeout, func() bool {
		delivered, dropped = nil, nil
		for _, e := range ev.Delivered() {
			delivered = append(delivered, e.GetTaskName()+": "+e.GetMessage())
		}
		for _, e := range ev.Dropped() {
			dropped = append(dropped, e.GetTaskName()+": "+e.GetMessage())
		}
		return len(delivered) > 0
	})
	if !ok {
		t.Fatal("the started task's event never arrived")
	}
	if want := "second: started /bin/sh"; len(delivered) != 1 || delivered[0] != want {
		t.Errorf("delivered %q; want [%q]", delivered, want)
	}
	if want := "first: recovering"; len(dropped) != 1 || dropped[0] != want {
		t.Errorf("dropped %q; want [%q]", dropped, want)
	}
}

// startSleeper starts a task named name running a shell that sleeps.
func startSleeper(t *testing.T, h *pluginhost.Host, name string) *drivers.TaskHandle {
	t.Helper()
	c := ctx(t)
	if err := h.SetConfig(c, nil, &base.NomadConfig{}); err != nil {
		t.Fatal(err)
	}
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	if err := h.EncodeTaskConfig(c, task, map[string]any{"command": "/bin/sh", "args": []string{"-c", "sleep 60"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetHandle()
}
