package pluginhost_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// startStubborn starts a shell that ignores SIGINT and SIGTERM, the kind
// of task a half-finished test leaves behind, and returns its handle and
// process group.
func startStubborn(t *testing.T, h *pluginhost.Host) (*drivers.TaskHandle, int) {
	t.Helper()
	if err := h.SetConfig(ctx(t), nil, &base.NomadConfig{}); err != nil {
		t.Fatal(err)
	}
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{Name: "stubborn"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	if err := h.EncodeTaskConfig(ctx(t), task, map[string]any{"command": "/bin/sh",
		"args": []string{"-c", "trap '' INT TERM; while :; do sleep 0.05; done"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		t.Fatal(err)
	}
	var hs struct{ Pid int }
	if err := json.Unmarshal(resp.GetHandle().GetDriverState(), &hs); err != nil || hs.Pid <= 0 {
		t.Fatalf("driver_state %q: %v", resp.GetHandle().GetDriverState(), err)
	}
	return resp.GetHandle(), hs.Pid
}

// TestReapDestroysStartedTasks: Reap force-destroys a task the test left
// running, through the plugin, and reports nothing wrong.
func TestReapDestroysStartedTasks(t *testing.T) {
	h := launch(t)
	handle, pgid := startStubborn(t, h)
	if got := h.Handles(); len(got) != 1 || got[0].GetConfig().GetId() != handle.GetConfig().GetId() {
		t.Fatalf("Handles() = %v; want the started task", got)
	}
	if err := h.Reap(ctx(t), testGroups); err != nil {
		t.Fatalf("reap: %v", err)
	}
	poll.Until(t, "the task's group to vanish", func() bool { return pluginhost.GroupGone(pgid) })
	insp, err := h.Driver.InspectTask(ctx(t), &drivers.InspectTaskRequest{TaskId: handle.GetConfig().GetId()})
	if err == nil {
		t.Errorf("the plugin still knows the task after Reap: %v", insp.GetTask())
	}
}

// TestReapKillsWhatACrashLeft: after the plugin crashes nobody can destroy
// its tasks, so Reap kills their groups itself and says so.
func TestReapKillsWhatACrashLeft(t *testing.T) {
	h := launch(t)
	_, pgid := startStubborn(t, h)
	if err := h.Crash(); err != nil {
		t.Fatal(err)
	}
	if pluginhost.GroupGone(pgid) {
		t.Fatal("the task died with the plugin; this test needs it to outlive it")
	}
	err := h.Reap(ctx(t), testGroups)
	if err == nil || !strings.Contains(err.Error(), "outlived its task; killed it") {
		t.Errorf("reap after a crash: %v; want the leftover group named", err)
	}
	poll.Until(t, "the orphaned group to vanish", func() bool { return pluginhost.GroupGone(pgid) })
	if err := h.Reap(ctx(t), testGroups); err != nil {
		t.Errorf("second reap: %v; want nothing left to kill", err)
	}
}
