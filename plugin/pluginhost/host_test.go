package pluginhost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

const driverEnv = "PLUGINHOST_TEST_DRIVER"

// TestMain doubles as the test driver plugin: launched with driverEnv set,
// the test binary serves testDriver instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv(driverEnv) == "1" {
		plugin.Serve(newTestDriver(context.Background()), nil)
		os.Exit(0)
	}
	if os.Getenv(hostEnv) == "1" {
		os.Exit(hostMain())
	}
	code := m.Run()
	if code == 0 {
		// Every host was closed: no client goroutine may outlive it.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func launch(t *testing.T) *pluginhost.Host {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := pluginhost.Launch(exe, pluginhost.Options{
		Env:    []string{driverEnv + "=1"},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: testWriter{t}, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.CloseAtEnd(t, testGroups)
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestBaseAndFingerprint drives the agent's start-up sequence: identity,
// schema, validation-phase SetConfig twice without nomad_config, the real
// SetConfig, Init, then the long-lived Fingerprint stream.
func TestBaseAndFingerprint(t *testing.T) {
	h := launch(t)
	c := ctx(t)
	info, err := h.Base.PluginInfo(c, &base.PluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pluginhost.CheckPluginInfo(info); err != nil {
		t.Fatal(err)
	}
	if info.GetName() != "hosttest" {
		t.Errorf("name %q", info.GetName())
	}
	cfg := map[string]any{"greeting": "hi", "ratio": 0.1}
	for range 2 {
		if err := h.SetConfig(c, cfg, nil); err != nil {
			t.Fatal(err)
		}
	}
	nomad := &base.NomadConfig{Driver: &base.NomadDriverConfig{ClientMinPort: 14000, ClientMaxPort: 14512}}
	if err := h.SetConfig(c, cfg, nomad); err != nil {
		t.Fatal(err)
	}
	if err := h.SetConfig(c, map[string]any{"colour": "red"}, nil); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown key: got %v; want an error naming it", err)
	}
	if _, err := h.Driver.Init(c, &drivers.InitRequest{}); err != nil {
		t.Fatal(err)
	}

	fp, err := h.Driver.Fingerprint(c, &drivers.FingerprintRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var last int64 = -1
	for range 3 {
		r, err := fp.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetHealth() != drivers.FingerprintResponse_HEALTHY {
			t.Errorf("health %v", r.GetHealth())
		}
		if g := r.GetAttributes()["driver.hosttest.greeting"].GetStringVal(); g != "hi" {
			t.Errorf("greeting attribute %q; want the configured %q", g, "hi")
		}
		round := r.GetAttributes()["driver.hosttest.round"].GetIntVal()
		if round <= last {
			t.Errorf("round %d after %d: the stream does not refresh", round, last)
		}
		last = round
	}

	caps, err := h.Driver.Capabilities(c, &drivers.CapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cc := caps.GetCapabilities(); !cc.GetSendSignals() || !cc.GetExec() || cc.GetMountConfigs() != drivers.DriverCapabilities_NO_MOUNTS {
		t.Errorf("capabilities %v", cc)
	}
}

// TestDefaultsWithoutConfigBlock: a plugin block without config {} still
// sends the schema's defaults.
func TestDefaultsWithoutConfigBlock(t *testing.T) {
	h := launch(t)
	c := ctx(t)
	if err := h.SetConfig(c, nil, nil); err != nil {
		t.Fatal(err)
	}
	fp, err := h.Driver.Fingerprint(c, &drivers.FingerprintRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := fp.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if g := r.GetAttributes()["driver.hosttest.greeting"].GetStringVal(); g != "hello" {
		t.Errorf("greeting %q; want the schema default", g)
	}
}

// TestTaskLifecycle drives every task RPC against a real process writing to
// the host's FIFOs.
func TestTaskLifecycle(t *testing.T) {
	h := launch(t)
	c := ctx(t)
	if err := h.SetConfig(c, nil, &base.NomadConfig{}); err != nil {
		t.Fatal(err)
	}
	events, err := h.Driver.TaskEvents(c, &drivers.TaskEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{
		Name:  "web",
		Ports: []*drivers.PortMapping{{Label: "http", Value: 25470, HostIp: "127.0.0.1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	// USR1, not HUP: a shell may not trap a signal ignored when it
	// started, and a suite run under nohup starts with HUP ignored.
	script := `trap 'echo got-usr1' USR1; trap '' INT TERM; echo port=${NOMAD_PORT_http}; echo to-stderr >&2; ` +
		`while :; do sleep 0.05; done`
	if err := h.EncodeTaskConfig(c, task, map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}); err != nil {
		t.Fatal(err)
	}
	started, err := h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		t.Fatal(err)
	}
	id := task.Config.GetId()
	handle := started.GetHandle()
	if handle.GetConfig().GetId() != id || handle.GetState() != drivers.TaskState_RUNNING {
		t.Fatalf("handle %v does not echo the task", handle)
	}
	var hs struct{ Pid int }
	if err := json.Unmarshal(handle.GetDriverState(), &hs); err != nil || hs.Pid == 0 {
		t.Fatalf("driver_state %q: %v", handle.GetDriverState(), err)
	}

	ev, err := events.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetAllocId() != task.Config.GetAllocId() || ev.GetTaskName() != "web" || ev.GetMessage() != "started /bin/sh" || !ev.GetTimestamp().IsValid() {
		t.Errorf("event %v", ev)
	}

	// The port was interpolated by the host before the plugin saw the config.
	poll.Until(t, "stdout through the FIFO", func() bool { return strings.Contains(task.Stdout.String(), "port=25470") })
	poll.Until(t, "stderr through the FIFO", func() bool { return strings.Contains(task.Stderr.String(), "to-stderr") })
	logFile, err := os.ReadFile(filepath.Join(task.Config.GetAllocDir(), "alloc", "logs", "web.stdout.0"))
	if err != nil || !strings.Contains(string(logFile), "port=25470") {
		t.Errorf("logmon-style log file: %q, %v", logFile, err)
	}

	insp, err := h.Driver.InspectTask(c, &drivers.InspectTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if insp.GetTask().GetState() != drivers.TaskState_RUNNING || !insp.GetTask().GetStartedAt().IsValid() {
		t.Errorf("inspect %v", insp.GetTask())
	}

	stats, err := h.Driver.TaskStats(c, &drivers.TaskStatsRequest{TaskId: id, CollectionInterval: durationpb.New(20 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := stats.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if !s.GetStats().GetTimestamp().IsValid() || s.GetStats().GetAggResourceUsage() == nil {
			t.Fatalf("stats without timestamp or aggregate usage: %v", s)
		}
		if s.GetStats().GetAggResourceUsage().GetMemory().GetRss() == 0 {
			t.Errorf("rss 0 for a running shell")
		}
	}

	if _, err := h.Driver.SignalTask(c, &drivers.SignalTaskRequest{TaskId: id, Signal: "SIGUSR1"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the USR1 trap", func() bool { return strings.Contains(task.Stdout.String(), "got-usr1") })
	if _, err := h.Driver.SignalTask(c, &drivers.SignalTaskRequest{TaskId: id, Signal: "SIGBOGUS"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bogus signal: got %v", err)
	}

	ex, err := h.Driver.ExecTask(c, &drivers.ExecTaskRequest{TaskId: id, Command: []string{"/bin/sh", "-c", "echo hi; echo oops >&2; exit 3"},
		Timeout: durationpb.New(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if string(ex.GetStdout()) != "hi\n" || string(ex.GetStderr()) != "oops\n" || ex.GetResult().GetExitCode() != 3 {
		t.Errorf("exec: stdout %q stderr %q result %v", ex.GetStdout(), ex.GetStderr(), ex.GetResult())
	}

	// Recovery of a task the plugin still tracks succeeds (the reattach case).
	if _, err := h.Driver.RecoverTask(c, &drivers.RecoverTaskRequest{Handle: handle}); err != nil {
		t.Errorf("recover a known task: %v", err)
	}
	bad := &drivers.TaskHandle{Config: &drivers.TaskConfig{Id: "x/y/z"}, DriverState: []byte("{not json")}
	if _, err := h.Driver.RecoverTask(c, &drivers.RecoverTaskRequest{Handle: bad}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("recover from garbage driver_state: got %v", err)
	}

	waited := h.WaitAsync(c, id)
	// The shell ignores SIGINT, so the stop must escalate to SIGKILL.
	if _, err := h.Driver.StopTask(c, &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(200 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if w := <-waited; w.Err != nil || w.Resp.GetResult().GetSignal() != int32(syscall.SIGKILL) {
		t.Errorf("wait %v, %v; want killed by SIGKILL after the timeout", w.Resp, w.Err)
	}
	poll.Until(t, "the process group to vanish", func() bool { return pluginhost.GroupGone(hs.Pid) })
	insp, err = h.Driver.InspectTask(c, &drivers.InspectTaskRequest{TaskId: id})
	if err != nil || insp.GetTask().GetState() != drivers.TaskState_EXITED || !insp.GetTask().GetCompletedAt().IsValid() {
		t.Errorf("inspect after stop: %v, %v", insp, err)
	}
	for range 2 { // idempotent, and unknown ids succeed
		if _, err := h.Driver.DestroyTask(c, &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
			t.Errorf("destroy: %v", err)
		}
	}
	if _, err := h.Driver.StopTask(c, &drivers.StopTaskRequest{TaskId: "unknown", Timeout: durationpb.New(time.Second)}); err != nil {
		t.Errorf("stop unknown: %v", err)
	}
}

// TestStartErrors: a config the plugin cannot decode fails with a message
// naming the attribute; a recoverable failure carries Nomad's marker.
func TestStartErrors(t *testing.T) {
	h := launch(t)
	c := ctx(t)
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	if err := h.EncodeTaskConfig(c, task, map[string]any{"args": []string{"x"}}); err == nil || !strings.Contains(err.Error(), "command") {
		t.Errorf("missing required attribute: got %v", err)
	}
	// Bytes a faithful Nomad never sends, straight to the plugin.
	task.Config.MsgpackDriverConfig = []byte("\x82\xa7command\xa4true\xa5extra\xc3")
	_, err = h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "extra: unknown attribute") {
		t.Errorf("unknown attribute: got %v", err)
	}
	if err := h.EncodeTaskConfig(c, task, map[string]any{"command": "fail-recoverably"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if !plugin.IsRecoverable(err) {
		t.Errorf("got %v; want a recoverable error", err)
	}
	// A handler's panic becomes an error; the plugin lives on.
	if err := h.EncodeTaskConfig(c, task, map[string]any{"command": "panic"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "asked to panic") {
		t.Errorf("panic: got %v; want an Internal error", err)
	}
	if _, err := h.Base.PluginInfo(c, &base.PluginInfoRequest{}); err != nil || h.Exited() {
		t.Errorf("plugin did not survive a panicking handler: %v", err)
	}
}

// TestCrash: a SIGKILLed plugin is seen as exited and its calls fail, as
// the Nomad client sees a crashed plugin; the socket it could not remove
// is removed by the host.
func TestCrash(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := launch(t)
	pid := h.Pid()
	if err := h.Crash(); err != nil {
		t.Fatal(err)
	}
	if !h.Exited() {
		t.Error("plugin not seen as exited")
	}
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		t.Errorf("plugin process %d still exists: %v", pid, err)
	}
	if _, err := h.Base.PluginInfo(ctx(t), &base.PluginInfoRequest{}); err == nil {
		t.Error("a call to a crashed plugin succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("files left in TMPDIR: %v", left)
	}
}
