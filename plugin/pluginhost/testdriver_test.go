package pluginhost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/ctymsgpack"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
	"github.com/llmgw/llmgw/plugin/proto/structs"
	"github.com/llmgw/llmgw/plugin/spec"
)

// testDriver is a minimal but real driver, served from the test binary: it
// runs a command per task with the task's FIFOs as stdout and stderr. It
// exists to prove the protocol glue and the host, not to be a good driver.
type testDriver struct {
	drivers.UnimplementedDriverServer
	base.UnimplementedBasePluginServer

	ctx    context.Context // the plugin's life
	events chan *drivers.DriverTaskEvent

	mu       sync.Mutex // guards config, setCalls and tasks
	config   pluginConfig
	setCalls int
	tasks    map[string]*testTask
}

type pluginConfig struct {
	Greeting string  `codec:"greeting"`
	Ratio    float64 `codec:"ratio"`
}

type taskConfig struct {
	Command string   `codec:"command"`
	Args    []string `codec:"args"`
}

type testTask struct {
	cfg     *drivers.TaskConfig
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has been reaped
	result  *drivers.ExitResult
	ended   time.Time
}

type handleState struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"`
}

// testGroups names the one process group a test driver task runs in: its
// command was started as a group leader.
func testGroups(h *drivers.TaskHandle) []int {
	var hs handleState
	if json.Unmarshal(h.GetDriverState(), &hs) != nil {
		return nil
	}
	return []int{hs.Pid}
}

func newTestDriver(ctx context.Context) *testDriver {
	return &testDriver{ctx: ctx, events: make(chan *drivers.DriverTaskEvent, 64), tasks: map[string]*testTask{}}
}

func (d *testDriver) PluginInfo(context.Context, *base.PluginInfoRequest) (*base.PluginInfoResponse, error) {
	return &base.PluginInfoResponse{Type: base.PluginType_DRIVER, PluginApiVersions: []string{plugin.APIVersion},
		PluginVersion: "0.1.0", Name: "hosttest"}, nil
}

func (d *testDriver) ConfigSchema(context.Context, *base.ConfigSchemaRequest) (*base.ConfigSchemaResponse, error) {
	return &base.ConfigSchemaResponse{Spec: spec.Object(map[string]*hclspec.Spec{
		"greeting": spec.Optional("greeting", "string", `"hello"`),
		"ratio":    spec.Attr("", "number", false),
	})}, nil
}

func (d *testDriver) SetConfig(_ context.Context, req *base.SetConfigRequest) (*base.SetConfigResponse, error) {
	var c pluginConfig
	if err := ctymsgpack.Decode(req.GetMsgpackConfig(), &c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "plugin config: %v", err)
	}
	d.mu.Lock()
	d.config, d.setCalls = c, d.setCalls+1
	d.mu.Unlock()
	return &base.SetConfigResponse{}, nil
}

func (d *testDriver) TaskConfigSchema(context.Context, *drivers.TaskConfigSchemaRequest) (*drivers.TaskConfigSchemaResponse, error) {
	return &drivers.TaskConfigSchemaResponse{Spec: spec.Object(map[string]*hclspec.Spec{
		"command": spec.Attr("", "string", true),
		"args":    spec.Attr("", "list(string)", false),
	})}, nil
}

func (d *testDriver) Capabilities(context.Context, *drivers.CapabilitiesRequest) (*drivers.CapabilitiesResponse, error) {
	return &drivers.CapabilitiesResponse{Capabilities: &drivers.DriverCapabilities{
		SendSignals: true, Exec: true, FsIsolation: drivers.DriverCapabilities_NONE,
		NetworkIsolationModes: []drivers.NetworkIsolationSpec_NetworkIsolationMode{drivers.NetworkIsolationSpec_HOST},
		MountConfigs:          drivers.DriverCapabilities_NO_MOUNTS,
	}}, nil
}

func (d *testDriver) Fingerprint(_ *drivers.FingerprintRequest, stream drivers.Driver_FingerprintServer) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := int64(0); ; n++ {
		d.mu.Lock()
		g := d.config.Greeting
		d.mu.Unlock()
		err := stream.Send(&drivers.FingerprintResponse{
			Attributes: map[string]*structs.Attribute{
				"driver.hosttest.greeting": {Value: &structs.Attribute_StringVal{StringVal: g}},
				"driver.hosttest.round":    {Value: &structs.Attribute_IntVal{IntVal: n}},
			},
			Health: drivers.FingerprintResponse_HEALTHY, HealthDescription: "Healthy",
		})
		if err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (d *testDriver) StartTask(_ context.Context, req *drivers.StartTaskRequest) (*drivers.StartTaskResponse, error) {
	cfg := req.GetTask()
	var tc taskConfig
	if err := ctymsgpack.Decode(cfg.GetMsgpackDriverConfig(), &tc); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "task config: %v", err)
	}
	if tc.Command == "panic" {
		panic("asked to panic")
	}
	if tc.Command == "fail-recoverably" {
		return nil, plugin.Recoverable(errors.New("asked to fail"))
	}
	stdout, err := os.OpenFile(cfg.GetStdoutPath(), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := os.OpenFile(cfg.GetStderrPath(), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	cmd := exec.Command(tc.Command, tc.Args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	for k, v := range cfg.GetEnv() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", tc.Command, err)
	}
	t := &testTask{cfg: cfg, cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		res := &drivers.ExitResult{}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ws := ee.Sys().(syscall.WaitStatus)
			res.ExitCode = int32(ws.ExitStatus())
			if ws.Signaled() {
				res.Signal = int32(ws.Signal())
			}
		}
		d.mu.Lock()
		t.result, t.ended = res, time.Now()
		d.mu.Unlock()
		close(t.done)
	}()
	d.mu.Lock()
	d.tasks[cfg.GetId()] = t
	d.mu.Unlock()
	d.emit(cfg, "started "+tc.Command)
	state, _ := json.Marshal(handleState{Pid: cmd.Process.Pid, Command: tc.Command})
	return &drivers.StartTaskResponse{Handle: &drivers.TaskHandle{
		Version: 1, Config: cfg, State: drivers.TaskState_RUNNING, DriverState: state,
	}}, nil
}

func (d *testDriver) emit(cfg *drivers.TaskConfig, msg string) {
	ev := &drivers.DriverTaskEvent{TaskId: cfg.GetId(), AllocId: cfg.GetAllocId(), TaskName: cfg.GetName(),
		Timestamp: timestamppb.Now(), Message: msg, Annotations: map[string]string{"source": "testdriver"}}
	select {
	case d.events <- ev:
	case <-d.ctx.Done():
	}
}

func (d *testDriver) task(id string) (*testTask, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tasks[id]
	return t, ok
}

func (d *testDriver) WaitTask(ctx context.Context, req *drivers.WaitTaskRequest) (*drivers.WaitTaskResponse, error) {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return &drivers.WaitTaskResponse{Result: t.result}, nil
}

func (d *testDriver) StopTask(ctx context.Context, req *drivers.StopTaskRequest) (*drivers.StopTaskResponse, error) {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return &drivers.StopTaskResponse{}, nil
	}
	sig := syscall.SIGINT
	if s := req.GetSignal(); s != "" {
		var err error
		if sig, err = parseSignal(s); err != nil {
			return nil, err
		}
	}
	_ = syscall.Kill(-t.cmd.Process.Pid, sig)
	timer := time.NewTimer(req.GetTimeout().AsDuration())
	defer timer.Stop()
	select {
	case <-t.done:
	case <-timer.C:
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &drivers.StopTaskResponse{}, nil
}

func (d *testDriver) DestroyTask(_ context.Context, req *drivers.DestroyTaskRequest) (*drivers.DestroyTaskResponse, error) {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return &drivers.DestroyTaskResponse{}, nil
	}
	select {
	case <-t.done:
	default:
		if !req.GetForce() {
			return nil, status.Error(codes.FailedPrecondition, "task is running")
		}
		_ = syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
		<-t.done
	}
	d.mu.Lock()
	delete(d.tasks, req.GetTaskId())
	d.mu.Unlock()
	return &drivers.DestroyTaskResponse{}, nil
}

func (d *testDriver) InspectTask(_ context.Context, req *drivers.InspectTaskRequest) (*drivers.InspectTaskResponse, error) {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	st := &drivers.TaskStatus{Id: t.cfg.GetId(), Name: t.cfg.GetName(), State: drivers.TaskState_RUNNING,
		StartedAt: timestamppb.New(t.started), CompletedAt: timestamppb.New(time.Time{})}
	if t.result != nil {
		st.State, st.Result, st.CompletedAt = drivers.TaskState_EXITED, t.result, timestamppb.New(t.ended)
	}
	return &drivers.InspectTaskResponse{Task: st, Driver: &drivers.TaskDriverStatus{
		Attributes: map[string]string{"pid": fmt.Sprint(t.cmd.Process.Pid)}}}, nil
}

func (d *testDriver) TaskStats(req *drivers.TaskStatsRequest, stream drivers.Driver_TaskStatsServer) error {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	}
	tick := time.NewTicker(req.GetCollectionInterval().AsDuration())
	defer tick.Stop()
	for {
		rss := uint64(0)
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", t.cmd.Process.Pid)); err == nil {
			var size, res uint64
			fmt.Sscan(string(b), &size, &res)
			rss = res * uint64(os.Getpagesize())
		}
		err := stream.Send(&drivers.TaskStatsResponse{Stats: &drivers.TaskStats{
			Id: t.cfg.GetId(), Timestamp: timestamppb.Now(),
			AggResourceUsage: &drivers.TaskResourceUsage{
				Cpu:    &drivers.CPUUsage{},
				Memory: &drivers.MemoryUsage{Rss: rss, MeasuredFields: []drivers.MemoryUsage_Fields{drivers.MemoryUsage_RSS}},
			},
		}})
		if err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-tick.C:
		}
	}
}

func (d *testDriver) TaskEvents(_ *drivers.TaskEventsRequest, stream drivers.Driver_TaskEventsServer) error {
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case ev := <-d.events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

func (d *testDriver) SignalTask(_ context.Context, req *drivers.SignalTaskRequest) (*drivers.SignalTaskResponse, error) {
	t, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	}
	sig, err := parseSignal(req.GetSignal())
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Process.Signal(sig); err != nil {
		return nil, err
	}
	return &drivers.SignalTaskResponse{}, nil
}

func (d *testDriver) ExecTask(ctx context.Context, req *drivers.ExecTaskRequest) (*drivers.ExecTaskResponse, error) {
	if _, ok := d.task(req.GetTaskId()); !ok {
		return nil, status.Errorf(codes.NotFound, "task %s not found", req.GetTaskId())
	}
	if len(req.GetCommand()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "empty command")
	}
	if t := req.GetTimeout().AsDuration(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, req.GetCommand()[0], req.GetCommand()[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	res := &drivers.ExitResult{}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, err
		}
		res.ExitCode = int32(ee.ExitCode())
	}
	return &drivers.ExecTaskResponse{Stdout: []byte(out.String()), Stderr: []byte(errb.String()), Result: res}, nil
}

func (d *testDriver) RecoverTask(_ context.Context, req *drivers.RecoverTaskRequest) (*drivers.RecoverTaskResponse, error) {
	id := req.GetHandle().GetConfig().GetId()
	if _, ok := d.task(id); ok {
		return &drivers.RecoverTaskResponse{}, nil
	}
	var hs handleState
	if err := json.Unmarshal(req.GetHandle().GetDriverState(), &hs); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "driver_state of %s: %v", id, err)
	}
	d.emit(req.GetHandle().GetConfig(), "recovering")
	// The test driver cannot re-attach to a process it did not start.
	return nil, status.Errorf(codes.FailedPrecondition, "task %s (pid %d) cannot be re-attached", id, hs.Pid)
}

func (d *testDriver) Init(context.Context, *drivers.InitRequest) (*drivers.InitResponse, error) {
	return &drivers.InitResponse{}, nil
}

var signals = map[string]syscall.Signal{"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM,
	"SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGKILL": syscall.SIGKILL}

func parseSignal(name string) (syscall.Signal, error) {
	if s, ok := signals[name]; ok {
		return s, nil
	}
	return 0, status.Errorf(codes.InvalidArgument, "unknown signal %q", name)
}

var _ plugin.Driver = (*testDriver)(nil)
