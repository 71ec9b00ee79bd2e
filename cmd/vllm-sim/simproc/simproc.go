// Package simproc runs vllm-sim as a child process, the way the driver
// launches vLLM: it starts the binary with `serve` and the given flags,
// reads the address from the line vLLM's uvicorn prints once serving, keeps
// the output for failure messages, and stops the process with SIGTERM, then
// SIGKILL of its process group, always reaping it.
//
// The demo and the tests of several packages start simulators; this is the
// one place that knows how, and that reads a simulator's ground-truth dump
// of its caches (ReadDump). It imports only the standard library.
package simproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// Options describe one simulator process.
type Options struct {
	Binary string   // the vllm-sim executable
	Args   []string // after "serve", e.g. the model and vLLM flags
	Env    []string // added to this process's environment
}

// Proc is one running simulator. URL is set once it serves.
type Proc struct {
	URL string

	cmd  *exec.Cmd
	addr chan string
	done chan struct{}

	mu   sync.Mutex
	logs bytes.Buffer
}

var uvicorn = regexp.MustCompile(`Uvicorn running on (http://\S+)`)

// Launch starts the process without waiting for it to serve.
func Launch(o Options) (*Proc, error) {
	cmd := exec.Command(o.Binary, append([]string{"serve"}, o.Args...)...)
	cmd.Env = append(os.Environ(), o.Env...)
	// Its own process group: a terminal's Ctrl-C reaches only our process,
	// which stops the simulator in order, and Stop can kill what it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("vllm-sim stderr: %w", err)
	}
	cmd.Stdout = cmd.Stderr // nil: discarded
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	p := &Proc{cmd: cmd, addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs.WriteString(line + "\n")
			p.mu.Unlock()
			if m := uvicorn.FindStringSubmatch(line); m != nil {
				select {
				case p.addr <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// ErrExited is returned by WaitReady when the process ended first.
var ErrExited = errors.New("vllm-sim exited before serving")

// WaitReady waits until the process serves, and sets URL. On failure the
// process is stopped: it has served nothing, so it gets only a short grace.
func (p *Proc) WaitReady(ctx context.Context, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case p.URL = <-p.addr:
		return nil
	case <-p.done:
		return fmt.Errorf("%w:\n%s", ErrExited, p.Output())
	case <-t.C:
		p.StopWithin(2 * time.Second)
		return fmt.Errorf("vllm-sim did not serve within %s:\n%s", timeout, p.Output())
	case <-ctx.Done():
		p.StopWithin(2 * time.Second)
		return ctx.Err()
	}
}

// Start launches the process and waits until it serves.
func Start(ctx context.Context, o Options, timeout time.Duration) (*Proc, error) {
	p, err := Launch(o)
	if err != nil {
		return nil, err
	}
	if err := p.WaitReady(ctx, timeout); err != nil {
		return nil, err
	}
	return p, nil
}

// Stop sends SIGTERM and waits; after 10 s it kills the process group. It
// returns once the process is reaped, and is safe to call more than once.
func (p *Proc) Stop() { p.StopWithin(10 * time.Second) }

// StopWithin is Stop with its own grace period. It reports whether the
// process needed SIGKILL.
func (p *Proc) StopWithin(grace time.Duration) (killed bool) {
	select {
	case <-p.done:
		return false
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return true
	}
}

// Done is closed once the process has exited and been reaped.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitCode is the exit status once Done is closed (-1 for a signal).
func (p *Proc) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output is everything the process wrote to stderr so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// Build compiles vllm-sim from this module into dir and returns its path.
// Tests build their own copy so that a stale bin/vllm-sim cannot mislead
// them; the Go build cache makes it cheap.
func Build(dir string) (string, error) {
	path := filepath.Join(dir, "vllm-sim")
	out, err := exec.Command("go", "build", "-o", path, "github.com/llmgw/llmgw/cmd/vllm-sim").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build vllm-sim: %v\n%s", err, out)
	}
	return path, nil
}

// Shared builds vllm-sim at most once per process for the tests of a
// package: $LLMGW_VLLM_SIM_BIN when set, else a build from this tree into a
// temporary directory that Remove deletes (call it from TestMain).
type Shared struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path returns the binary, building it on first use.
func (s *Shared) Path() (string, error) {
	if p := os.Getenv("LLMGW_VLLM_SIM_BIN"); p != "" {
		return p, nil
	}
	s.once.Do(func() {
		if s.dir, s.err = os.MkdirTemp("", "vllm-sim-"); s.err == nil {
			s.path, s.err = Build(s.dir)
		}
	})
	return s.path, s.err
}

// Remove deletes what Path built, if anything.
func (s *Shared) Remove() {
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
