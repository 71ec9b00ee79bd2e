package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Binaries built once by TestMain: the real plugin and the engine stand-in.
var pluginBin, simBin string

func TestMain(m *testing.M) {
	// In-process drivers supervise shards with this binary.
	if len(os.Args) > 1 && os.Args[1] == supervisor.Mode {
		os.Exit(supervisor.Run(os.Args[2:]))
	}
	// A process of another user, trying the KV-event sockets.
	if len(os.Args) > 1 && os.Args[1] == connectProbeMode {
		os.Exit(connectProbe(os.Args[2:]))
	}
	dir, err := os.MkdirTemp("", "driver-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Readable by all: as root, the plugin runs engines as default_user.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin, simBin = filepath.Join(dir, "nomad-driver-vllm"), filepath.Join(dir, "vllm-sim")
	for bin, pkg := range map[string]string{pluginBin: "./cmd/nomad-driver-vllm", simBin: "./cmd/vllm-sim"} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// launch starts the real plugin binary and configures it as the agent's
// long-lived instance would, with engine as the engine binary. When the
// test ends, every shard the host started or recovered is force-destroyed
// and its process groups must be gone, so a test that fails halfway leaves
// no supervisor or engine running.
func launch(t *testing.T, engine string) *pluginhost.Host {
	t.Helper()
	return launchWith(t, engine, nil)
}

// launchWith is launch with more plugin config, e.g. kv_transport.
func launchWith(t *testing.T, engine string, extra map[string]any) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.Launch(pluginBin, pluginhost.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: testWriter{t}, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.CloseAtEnd(t, shardGroups)
	nomad := &base.NomadConfig{Driver: &base.NomadDriverConfig{ClientMinPort: 14000, ClientMaxPort: 14512}}
	config := map[string]any{"engine": engine}
	for k, v := range extra {
		config[k] = v
	}
	if err := h.SetConfig(ctx(t), config, nomad); err != nil {
		t.Fatal(err)
	}
	return h
}

// kvWhere is where InspectTask says a shard's listener meets its engine:
// its socket directory, else its port; "" without KV events. Events name
// it at their end.
func kvWhere(attrs map[string]string) string {
	if d := attrs["kv_socket_dir"]; d != "" {
		return d
	}
	return attrs["kv_port"]
}

// shardGroups names the two process groups of a shard: the supervisor's
// (it leads a session of its own) and the engine's.
func shardGroups(h *drivers.TaskHandle) []int {
	var st driver.TaskState
	if json.Unmarshal(h.GetDriverState(), &st) != nil {
		return nil
	}
	return []int{st.Supervisor.SupervisorPid, st.Supervisor.EnginePid}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// newTask allocates a task with an "http" port and encodes config.
func newTask(t *testing.T, h *pluginhost.Host, config map[string]any) *pluginhost.Task {
	t.Helper()
	return newTaskIn(t, h, reachableTempDir(t), config)
}

// newTaskIn is newTask with its alloc directory under root.
func newTaskIn(t *testing.T, h *pluginhost.Host, root string, config map[string]any) *pluginhost.Task {
	t.Helper()
	task, err := pluginhost.NewTask(root, pluginhost.TaskSpec{
		Name:  "shard",
		Ports: []*drivers.PortMapping{{Label: "http", Value: int32(netport.FreeTCP(t)), HostIp: "127.0.0.1"}},
		Env:   map[string]string{"NVIDIA_VISIBLE_DEVICES": "GPU-test-0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	if err := h.EncodeTaskConfig(ctx(t), task, config); err != nil {
		t.Fatal(err)
	}
	return task
}

// start starts the task on h, failing the test if the plugin refuses, and
// returns its handle.
func start(t *testing.T, h *pluginhost.Host, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	resp, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetHandle()
}

// events reads the task events Nomad's client would record (the plugin
// host's model of it, pluginhost.Events), in order.
type events struct {
	e   *pluginhost.Events
	pos int // delivered events read so far
}

func watchEvents(t *testing.T, h *pluginhost.Host) *events {
	t.Helper()
	e := h.WatchEvents()
	t.Cleanup(e.Close)
	return &events{e: e}
}

// take waits for the next delivered event until timeout fires.
func (e *events) take(timeout <-chan time.Time) (*drivers.DriverTaskEvent, bool) {
	for {
		changed := e.e.Changed()
		if d := e.e.Delivered(); len(d) > e.pos {
			e.pos++
			return d[e.pos-1], true
		}
		select {
		case <-changed:
		case <-timeout:
			return nil, false
		}
	}
}

// next waits for an event whose message starts with prefix, skipping others.
func (e *events) next(t *testing.T, prefix string) *drivers.DriverTaskEvent {
	t.Helper()
	timeout := time.After(poll.Timeout)
	for {
		ev, ok := e.take(timeout)
		if !ok {
			t.Fatalf("no event %q; dropped for want of a handler: %v", prefix, e.e.Dropped())
		}
		if strings.HasPrefix(ev.GetMessage(), prefix) {
			return ev
		}
	}
}

func engineURL(task *pluginhost.Task) string {
	p := task.Config.GetResources().GetPorts()[0]
	return "http://127.0.0.1:" + strconv.Itoa(int(p.GetValue()))
}

func complete(t *testing.T, url, prompt string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "sim", "prompt": prompt, "max_tokens": 2})
	resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %s", resp.Status)
	}
}

func inspect(t *testing.T, h *pluginhost.Host, id string) *drivers.InspectTaskResponse {
	t.Helper()
	r, err := h.Driver.InspectTask(ctx(t), &drivers.InspectTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func enginePid(t *testing.T, h *pluginhost.Host, id string) int {
	t.Helper()
	pid, err := strconv.Atoi(inspect(t, h, id).GetDriver().GetAttributes()["engine_pid"])
	if err != nil || pid <= 0 {
		t.Fatalf("engine_pid attribute: %v", err)
	}
	return pid
}

func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return f[0]
}

// TestLifecycle drives one vllm-sim shard through the whole task
// lifecycle: start, KV and health events, logs in the FIFOs, stats, exec,
// signals, a stop that must escalate to SIGKILL, and destroy.
func TestLifecycle(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	if hd := start(t, h, task.Config); hd.GetConfig().GetId() != id || len(hd.GetDriverState()) == 0 || hd.GetVersion() != 1 {
		t.Fatalf("handle %v", hd)
	}
	kv := ev.next(t, "KV events")
	if kv.GetAnnotations()["kv_events"] != "on" || kv.GetAllocId() != task.Config.GetAllocId() || kv.GetTaskName() != "shard" {
		t.Errorf("kv event %v; want events on", kv)
	}
	ev.next(t, "engine started")
	ev.next(t, "model ready")
	poll.Until(t, "uvicorn's line in the stderr FIFO", func() bool { return strings.Contains(task.Stderr.String(), "Uvicorn running on") })

	pid := enginePid(t, h, id)
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if !bytes.Contains(environ, []byte("CUDA_VISIBLE_DEVICES=GPU-test-0\x00")) {
		t.Error("engine environment lacks CUDA_VISIBLE_DEVICES from NVIDIA_VISIBLE_DEVICES")
	}
	assertIPCEndpoint(t, pid, task)
	complete(t, engineURL(task), strings.Repeat("the quick brown fox jumps over the lazy dog ", 8))

	stats, err := h.Driver.TaskStats(ctx(t), &drivers.TaskStatsRequest{TaskId: id, CollectionInterval: durationpb.New(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		s, err := stats.Recv()
		if err != nil {
			t.Fatal(err)
		}
		st := s.GetStats()
		if !st.GetTimestamp().IsValid() || st.GetAggResourceUsage() == nil || st.GetAggResourceUsage().GetMemory().GetRss() == 0 {
			t.Fatalf("stats %v: want a timestamp and the group's RSS", st)
		}
	}

	ex, err := h.Driver.ExecTask(ctx(t), &drivers.ExecTaskRequest{TaskId: id,
		Command: []string{"/bin/sh", "-c", "echo $NOMAD_TASK_NAME; exit 4"}, Timeout: durationpb.New(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if string(ex.GetStdout()) != "shard\n" || ex.GetResult().GetExitCode() != 4 {
		t.Errorf("exec: %q, %v", ex.GetStdout(), ex.GetResult())
	}

	// Stop the engine with SIGSTOP: it cannot act on SIGTERM then, so the
	// stop below must escalate to SIGKILL after its timeout.
	if _, err := h.Driver.SignalTask(ctx(t), &drivers.SignalTaskRequest{TaskId: id, Signal: "SIGSTOP"}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the engine to be stopped", func() bool { return procState(pid) == "T" })
	if _, err := h.Driver.SignalTask(ctx(t), &drivers.SignalTaskRequest{TaskId: id, Signal: "SIGNOPE"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown signal: %v", err)
	}

	waited := h.WaitAsync(ctx(t), id)
	if _, err := h.Driver.StopTask(ctx(t), &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(300 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	ev.next(t, "engine did not stop within")
	if w := <-waited; w.Err != nil || w.Resp.GetResult().GetSignal() != int32(syscall.SIGKILL) {
		t.Errorf("wait %v, %v; want SIGKILL after the timeout", w.Resp, w.Err)
	}
	poll.Until(t, "no process of the shard's group", func() bool { return pluginhost.GroupGone(pid) })
	if st := inspect(t, h, id).GetTask(); st.GetState() != drivers.TaskState_EXITED || !st.GetCompletedAt().IsValid() {
		t.Errorf("inspect after stop: %v", st)
	}
	for range 2 {
		if _, err := h.Driver.DestroyTask(ctx(t), &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Driver.InspectTask(ctx(t), &drivers.InspectTaskRequest{TaskId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("inspect after destroy: %v", err)
	}
}

// TestGracefulStop: SIGTERM (the default) lets vllm-sim exit cleanly.
func TestGracefulStop(t *testing.T) {
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	if e := ev.next(t, "KV events"); !strings.Contains(e.GetMessage(), "kv_events is not set") {
		t.Errorf("event %q; want events off because not asked", e.GetMessage())
	}
	ev.next(t, "model ready")
	if _, err := h.Driver.StopTask(ctx(t), &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(20 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	r, err := h.Driver.WaitTask(ctx(t), &drivers.WaitTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetResult().GetExitCode() != 0 || r.GetResult().GetSignal() != 0 || r.GetErr() != "" {
		t.Errorf("wait %v; want a clean exit", r)
	}
}

// TestExecStreaming is `nomad alloc exec -t=false` against a running shard.
func TestExecStreaming(t *testing.T) {
	h := launch(t, simBin)
	task := newTask(t, h, map[string]any{"model": "sim", "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	defer stop(t, h, id)
	s, err := h.Driver.ExecTaskStreaming(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*drivers.ExecTaskStreamingRequest{
		{Setup: &drivers.ExecTaskStreamingRequest_Setup{TaskId: id, Command: []string{"/bin/sh", "-c", "tr a-z A-Z; echo done >&2; exit 5"}}},
		{}, // heartbeat
		{Stdin: &drivers.ExecTaskStreamingIOOperation{Data: []byte("hello ")}},
		{Stdin: &drivers.ExecTaskStreamingIOOperation{Data: []byte("nomad\n")}},
		{Stdin: &drivers.ExecTaskStreamingIOOperation{Close: true}},
	}
	for _, m := range msgs {
		if err := s.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr strings.Builder
	var closed int
	for {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("stream ended before the exit: %v", err)
		}
		stdout.Write(r.GetStdout().GetData())
		stderr.Write(r.GetStderr().GetData())
		if r.GetStdout().GetClose() || r.GetStderr().GetClose() {
			closed++
		}
		if r.GetExited() {
			if r.GetResult().GetExitCode() != 5 {
				t.Errorf("exit %v; want 5", r.GetResult())
			}
			break
		}
	}
	if stdout.String() != "HELLO NOMAD\n" || stderr.String() != "done\n" || closed != 2 {
		t.Errorf("stdout %q, stderr %q, %d closes", stdout.String(), stderr.String(), closed)
	}

	tty, err := h.Driver.ExecTaskStreaming(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	_ = tty.Send(&drivers.ExecTaskStreamingRequest{Setup: &drivers.ExecTaskStreamingRequest_Setup{TaskId: id, Command: []string{"sh"}, Tty: true}})
	if _, err := tty.Recv(); status.Code(err) != codes.Unimplemented {
		t.Errorf("tty exec: %v; want Unimplemented", err)
	}
}

// assertIPCEndpoint checks that the engine's command line names an ipc://
// KV-event endpoint in its task's socket directory.
func assertIPCEndpoint(t *testing.T, pid int, task *pluginhost.Task) {
	t.Helper()
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	sockets := filepath.Join(task.Config.GetAllocDir(), task.Config.GetName(), "llmgw-kv")
	if !bytes.Contains(cmdline, []byte(`"endpoint":"ipc://`+sockets+`/inproc-events"`)) {
		t.Errorf("engine command line lacks an ipc kv endpoint in %s: %q", sockets, cmdline)
	}
}

// reachableTempDir is a test directory that every user can enter, as a
// Nomad client's alloc directories are: as root the plugin runs engines
// (and exec sessions) as default_user, who must reach the task directory.
// Its path is short whatever the test's name, so the KV-event sockets in
// a task directory under it fit a Unix socket address (kv_transport
// "ipc" falls back to TCP for longer paths).
func reachableTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "drv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
