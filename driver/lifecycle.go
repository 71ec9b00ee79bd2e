package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// WaitTask blocks until the shard exits and returns its true exit status;
// after an exit it answers at once, as often as asked.
func (d *Driver) WaitTask(ctx context.Context, req *drivers.WaitTaskRequest) (*drivers.WaitTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, taskIDErr(req.GetTaskId())
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-d.ctx.Done():
		return nil, status.Error(codes.Unavailable, "plugin shutdown")
	}
	res, msg := h.result()
	return &drivers.WaitTaskResponse{Result: res, Err: msg}, nil
}

// defaultStopSignal is sent when the job sets no kill_signal: vLLM's API
// server shuts down gracefully on SIGTERM.
const defaultStopSignal = syscall.SIGTERM

// StopTask signals the shard's process group, waits up to the timeout,
// then SIGKILLs the group; it returns once the shard is gone, and closes
// the replica's KV listener, telling routers it holds nothing. Unknown and
// exited tasks succeed, as Nomad's client retries errors.
func (d *Driver) StopTask(ctx context.Context, req *drivers.StopTaskRequest) (*drivers.StopTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return &drivers.StopTaskResponse{}, nil
	}
	sig := defaultStopSignal
	if name := req.GetSignal(); name != "" {
		s, err := parseSignal(name)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "stop %s: %v", h.id, err)
		}
		sig = s
	}
	if err := d.stop(ctx, h, sig, req.GetTimeout().AsDuration()); err != nil {
		return nil, err
	}
	d.kv.release(h.state.Replica, h.id)
	return &drivers.StopTaskResponse{}, nil
}

func (d *Driver) stop(ctx context.Context, h *taskHandle, sig syscall.Signal, timeout time.Duration) error {
	if h.exited() {
		return nil
	}
	h.log.Info("stopping engine", "signal", sig.String(), "timeout", timeout.String())
	h.markStopping()
	if err := h.proc.Signal(sig); err != nil {
		return fmt.Errorf("stop %s: %w", h.id, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-h.done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	h.log.Warn("engine outlived its kill timeout; killing its process group", "timeout", timeout.String())
	d.events.emit(h.cfg, "engine did not stop within "+timeout.String()+"; sent SIGKILL", nil)
	return d.kill(ctx, h)
}

// kill SIGKILLs the shard's process group and waits until it has exited.
func (d *Driver) kill(ctx context.Context, h *taskHandle) error {
	h.markStopping()
	if err := h.proc.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s: %w", h.id, err)
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-d.ctx.Done():
		return status.Error(codes.Unavailable, "plugin shutdown")
	}
}

// DestroyTask frees everything of a task; Nomad always forces it. It is
// idempotent, and an unknown id succeeds.
func (d *Driver) DestroyTask(ctx context.Context, req *drivers.DestroyTaskRequest) (*drivers.DestroyTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return &drivers.DestroyTaskResponse{}, nil
	}
	if !h.exited() {
		if !req.GetForce() {
			return nil, status.Errorf(codes.FailedPrecondition, "task %s is still running; stop it or force", h.id)
		}
		if err := d.kill(ctx, h); err != nil {
			return nil, err
		}
	}
	d.kv.release(h.state.Replica, h.id)
	h.detach()
	d.tasks.remove(h.id)
	return &drivers.DestroyTaskResponse{}, nil
}

// InspectTask reports a task's state; timestamps are always set, as
// Nomad's decoder rejects nil ones.
func (d *Driver) InspectTask(_ context.Context, req *drivers.InspectTaskRequest) (*drivers.InspectTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, taskIDErr(req.GetTaskId())
	}
	ts := &drivers.TaskStatus{Id: h.id, Name: h.cfg.GetName(), State: drivers.TaskState_RUNNING,
		StartedAt: timestamppb.New(h.state.StartedAt), CompletedAt: timestamppb.New(time.Time{})}
	if h.exited() {
		res, _ := h.result()
		h.mu.Lock()
		ts.State, ts.Result, ts.CompletedAt = drivers.TaskState_EXITED, res, timestamppb.New(h.completedAt)
		h.mu.Unlock()
	}
	h.mu.Lock()
	ready := h.ready
	h.mu.Unlock()
	attrs := map[string]string{
		"engine_pid": strconv.Itoa(h.proc.EnginePid()),
		"replica":    h.state.Replica,
		"ready":      strconv.FormatBool(ready),
		"kv_events":  strconv.FormatBool(h.state.hasKV()),
	}
	if h.state.KVDir != "" {
		attrs["kv_socket_dir"] = h.state.KVDir
	} else if h.state.KVPort > 0 {
		attrs["kv_port"] = strconv.Itoa(h.state.KVPort)
	}
	if l, ok := d.kv.lookup(h.state.Replica); ok {
		sum, c := d.kv.summary(h.state.Replica), l.Counters()
		attrs["kv_listening"] = "true"
		attrs["kv_blocks"] = strconv.Itoa(sum.Blocks)
		attrs["kv_key_sum"] = strconv.FormatUint(sum.KeySum, 16)
		attrs["kv_batches"] = strconv.FormatUint(c.Batches, 10)
		attrs["kv_replayed"] = strconv.FormatUint(c.Replayed, 10)
		attrs["kv_lost"] = strconv.FormatUint(c.Lost, 10)
		attrs["kv_restarts"] = strconv.FormatUint(c.Restarts, 10)
		attrs["kv_disconnects"] = strconv.FormatUint(c.Disconnects, 10)
	}
	return &drivers.InspectTaskResponse{Task: ts, Driver: &drivers.TaskDriverStatus{Attributes: attrs}}, nil
}

// SignalTask sends a named signal (e.g. "SIGHUP") to the shard's process group.
func (d *Driver) SignalTask(_ context.Context, req *drivers.SignalTaskRequest) (*drivers.SignalTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, taskIDErr(req.GetTaskId())
	}
	sig, err := parseSignal(req.GetSignal())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "signal %s: %v", h.id, err)
	}
	if err := h.proc.Signal(sig); err != nil {
		return nil, err
	}
	return &drivers.SignalTaskResponse{}, nil
}

// maxExecOutput bounds what ExecTask returns per stream.
const maxExecOutput = 1 << 20

// ExecTask runs a command next to the shard, in its directory and
// environment (script checks, templates).
func (d *Driver) ExecTask(ctx context.Context, req *drivers.ExecTaskRequest) (*drivers.ExecTaskResponse, error) {
	h, ok := d.task(req.GetTaskId())
	if !ok {
		return nil, taskIDErr(req.GetTaskId())
	}
	argv := req.GetCommand()
	if len(argv) == 0 || argv[0] == "" {
		return nil, status.Error(codes.InvalidArgument, "exec: empty command")
	}
	if t := req.GetTimeout().AsDuration(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = maxExecOutput, maxExecOutput
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = h.state.Env, h.state.Dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := runAs(cmd, h.state.User); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "exec: %v", err)
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	res := &drivers.ExitResult{}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, status.Errorf(codes.FailedPrecondition, "exec %q: %v", argv[0], err)
		}
		ws := ee.Sys().(syscall.WaitStatus)
		res.ExitCode = int32(ws.ExitStatus())
		if ws.Signaled() {
			res.ExitCode, res.Signal = int32(128+int(ws.Signal())), int32(ws.Signal())
		}
	}
	return &drivers.ExecTaskResponse{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Result: res}, nil
}

// runAs makes cmd run as the task's user, as its engine does.
func runAs(cmd *exec.Cmd, user string) error {
	if user == "" {
		return nil
	}
	cred, err := supervisor.Credential(user)
	if err != nil {
		return err
	}
	cmd.SysProcAttr.Credential = cred
	return nil
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var signals = map[string]syscall.Signal{
	"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT, "SIGKILL": syscall.SIGKILL,
	"SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGTERM": syscall.SIGTERM, "SIGCONT": syscall.SIGCONT,
	"SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP, "SIGWINCH": syscall.SIGWINCH, "SIGALRM": syscall.SIGALRM,
}

// parseSignal accepts Nomad's signal names ("SIGHUP", also "HUP").
func parseSignal(name string) (syscall.Signal, error) {
	if s, ok := signals[name]; ok {
		return s, nil
	}
	if s, ok := signals["SIG"+name]; ok {
		return s, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}
