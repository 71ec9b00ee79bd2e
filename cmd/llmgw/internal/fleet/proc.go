package fleet

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
)

// proc is one child process the fleet started directly (the Consul agent, a
// router). It runs in a process group of its own, so a terminal's Ctrl-C
// reaches only the fleet's owner, which then stops everything in order; it
// gets SIGKILL should the owner die without stopping it (internal/localproc/pdeathsig
// keeps the forking thread alive as long as the child, as that signal
// requires). Its output goes to a log file in the work dir, and a goroutine
// reaps it.
type proc struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has been reaped
}

// startProc starts argv with environment env (nil: ours), its stdout and
// stderr in logPath.
func startProc(name, logPath string, argv, env []string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	thread, err := pdeathsig.Start(cmd, syscall.SIGKILL, cmd.Start)
	if err != nil {
		logf.Close()
		<-thread.Done()
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		<-thread.Done() // released as soon as the process has exited
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, and SIGKILL to the whole group after grace; it
// returns once the process is reaped. Safe to call more than once.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// kill sends SIGKILL to the process group, as a crash would, and returns
// once the process is reaped.
func (p *proc) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// tail is the end of the process's log, for error messages.
func (p *proc) tail() string { return logTail(p.logPath) }

// logTail returns the last few KiB of a log file.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}
