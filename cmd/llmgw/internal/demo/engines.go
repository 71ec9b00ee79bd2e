package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// engine is one vllm-sim process.
type engine struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
}

var uvicorn = regexp.MustCompile(`Uvicorn running on (http://\S+)`)

// startEngine launches vllm-sim exactly as the driver launches vLLM and waits
// for it to serve.
func startEngine(ctx context.Context, binary string, args ...string) (*engine, error) {
	cmd := exec.Command(binary, append([]string{"serve", "demo-model", "--host", "127.0.0.1", "--port", "0"}, args...)...)
	// Its own process group, so Ctrl-C reaches us and we stop it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	e := &engine{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := uvicorn.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(e.done)
	}()
	select {
	case e.url = <-urls:
		return e, nil
	case <-e.done:
		return nil, fmt.Errorf("%s exited before serving", binary)
	case <-time.After(30 * time.Second):
		e.stop()
		return nil, fmt.Errorf("%s did not serve within 30s", binary)
	case <-ctx.Done():
		e.stop()
		return nil, ctx.Err()
	}
}

// stop sends SIGTERM, waits, and kills the process group if it lingers.
func (e *engine) stop() {
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
		<-e.done
	}
}
