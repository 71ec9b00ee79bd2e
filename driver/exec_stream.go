package driver

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// ExecTaskStreaming serves `nomad alloc exec` without a terminal: the first
// message sets the command up, later ones carry stdin (or are heartbeats);
// stdout and stderr stream back, each closed at EOF, then the exit. A
// client that goes away kills the command's process group.
func (d *Driver) ExecTaskStreaming(stream drivers.Driver_ExecTaskStreamingServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	setup := first.GetSetup()
	if setup == nil {
		return status.Error(codes.InvalidArgument, "exec: the first message must carry setup")
	}
	h, ok := d.task(setup.GetTaskId())
	if !ok {
		return taskIDErr(setup.GetTaskId())
	}
	if setup.GetTty() {
		return status.Error(codes.Unimplemented, "exec: terminals are not supported by the vllm driver; use -t=false")
	}
	argv := setup.GetCommand()
	if len(argv) == 0 || argv[0] == "" {
		return status.Error(codes.InvalidArgument, "exec: empty command")
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = h.state.Env, h.state.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := runAs(cmd, h.state.User); err != nil {
		return status.Errorf(codes.FailedPrecondition, "exec: %v", err)
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return status.Errorf(codes.FailedPrecondition, "exec %q: %v", argv[0], err)
	}

	var sendMu sync.Mutex // gRPC streams allow one sender at a time
	send := func(m *drivers.ExecTaskStreamingResponse) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	// Stdin: runs until the client closes it, leaves, or the handler
	// returns (which ends the stream's context and so Recv).
	go func() {
		defer stdin.Close()
		for {
			m, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					cancel()
				}
				return
			}
			in := m.GetStdin()
			if len(in.GetData()) > 0 {
				if _, err := stdin.Write(in.GetData()); err != nil {
					return
				}
			}
			if in.GetClose() {
				return
			}
		}
	}()
	var wg sync.WaitGroup
	var sendErr error
	var errMu sync.Mutex
	pump := func(r io.Reader, wrap func(*drivers.ExecTaskStreamingIOOperation) *drivers.ExecTaskStreamingResponse) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if e := send(wrap(&drivers.ExecTaskStreamingIOOperation{Data: append([]byte(nil), buf[:n]...)})); e != nil {
					errMu.Lock()
					sendErr = e
					errMu.Unlock()
					cancel()
					return
				}
			}
			if err != nil {
				_ = send(wrap(&drivers.ExecTaskStreamingIOOperation{Close: true}))
				return
			}
		}
	}
	wg.Add(2)
	go pump(stdout, func(op *drivers.ExecTaskStreamingIOOperation) *drivers.ExecTaskStreamingResponse {
		return &drivers.ExecTaskStreamingResponse{Stdout: op}
	})
	go pump(stderr, func(op *drivers.ExecTaskStreamingIOOperation) *drivers.ExecTaskStreamingResponse {
		return &drivers.ExecTaskStreamingResponse{Stderr: op}
	})
	wg.Wait()
	res := &drivers.ExitResult{}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return status.Errorf(codes.Internal, "exec %q: %v", argv[0], err)
		}
		ws := ee.Sys().(syscall.WaitStatus)
		res.ExitCode = int32(ws.ExitStatus())
		if ws.Signaled() {
			res.ExitCode, res.Signal = int32(128+int(ws.Signal())), int32(ws.Signal())
		}
	}
	errMu.Lock()
	defer errMu.Unlock()
	if sendErr != nil {
		return sendErr
	}
	return send(&drivers.ExecTaskStreamingResponse{Exited: true, Result: res})
}
