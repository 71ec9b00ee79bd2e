package driver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestOwnerStopsShards: with owner_pid set, a shard outlives its plugin
// (a recovered plugin takes it over, as without the option) but not its
// owner: when the owner dies, the shard is stopped as StopTask stops it
// (SIGTERM first, to which vllm-sim answers with a clean exit).
func TestOwnerStopsShards(t *testing.T) {
	owner := exec.Command("sleep", "300")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill(); _ = owner.Wait() })
	config := map[string]any{"engine": simBin, "owner_pid": owner.Process.Pid}

	h1 := launch(t, simBin)
	if err := h1.SetConfig(ctx(t), config, nil); err != nil {
		t.Fatal(err)
	}
	task := newTask(t, h1, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	started := start(t, h1, task.Config)
	pid := enginePid(t, h1, id)
	var st driver.TaskState
	if err := json.Unmarshal(started.GetDriverState(), &st); err != nil {
		t.Fatal(err)
	}
	cmdline := procCmdline(st.Supervisor.SupervisorPid)
	if want := "-owner " + strconv.Itoa(owner.Process.Pid) + ":"; !strings.Contains(cmdline, want) {
		t.Errorf("supervisor command line %q; want %q", cmdline, want)
	}

	if err := h1.Crash(); err != nil {
		t.Fatal(err)
	}
	if pluginhost.GroupGone(pid) {
		t.Fatal("the shard died with its plugin, not its owner")
	}
	h2 := launch(t, simBin)
	handle := proto.Clone(started).(*drivers.TaskHandle)
	if _, err := h2.Driver.RecoverTask(ctx(t), &drivers.RecoverTaskRequest{Handle: handle}); err != nil {
		t.Fatal(err)
	}

	if s := inspect(t, h2, id).GetTask().GetState(); s != drivers.TaskState_RUNNING {
		t.Fatalf("task %v while its owner lives", s)
	}
	// The clean exit below needs the engine to have installed its
	// SIGTERM handler; a SIGTERM during its start kills it (143), as it
	// would kill vLLM while Python starts.
	poll.Until(t, "the engine to catch SIGTERM", func() bool { return catchesSIGTERM(pid) })
	_ = owner.Process.Kill()
	_ = owner.Wait()
	r, err := h2.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	// vllm-sim exits 0 only when stopped by SIGTERM or SIGINT.
	if res := r.GetResult(); res.GetExitCode() != 0 || res.GetSignal() != 0 || r.GetErr() != "" {
		t.Errorf("wait after the owner died: %v; want the clean exit of a SIGTERM", r)
	}
	// The supervisor reports the engine's exit before it exits itself, so
	// WaitTask can return while it is still on its way out.
	poll.Until(t, "the shard's processes to exit after their owner", func() bool {
		return pluginhost.GroupGone(pid) && pluginhost.GroupGone(st.Supervisor.SupervisorPid)
	})
}

// TestOwnerPidChecked: an owner_pid that names no process fails SetConfig
// with a message naming the option, and so does a negative one.
func TestOwnerPidChecked(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	h := launch(t, simBin)
	for _, pid := range []int{gone.Process.Pid, -1} {
		err := h.SetConfig(ctx(t), map[string]any{"engine": simBin, "owner_pid": pid}, nil)
		if err == nil || !strings.Contains(err.Error(), "owner_pid") {
			t.Errorf("owner_pid %d: got %v; want an error naming owner_pid", pid, err)
		}
	}
}

func procCmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// catchesSIGTERM reports whether process pid has a handler for SIGTERM,
// from the caught-signals mask in /proc/PID/status.
func catchesSIGTERM(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			v, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && v&(1<<(15-1)) != 0 // SIGTERM is 15
		}
	}
	return false
}
