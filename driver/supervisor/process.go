package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process is a supervised engine seen from the plugin: started by this
// plugin process or re-attached after a restart.
type Process struct {
	st   State
	done chan struct{} // closed once the supervisor has exited

	stopWatch func() // ends the pidfd watcher of an attached process
	stopped   chan struct{}

	mu   sync.Mutex // guards exit
	exit *Exit
}

func newProcess(st State, reaped chan struct{}) *Process {
	p := &Process{st: st, done: reaped, stopWatch: func() {}, stopped: make(chan struct{})}
	close(p.stopped)
	return p
}

// Attach re-attaches to a supervisor from its State, after a plugin
// restart. It fails if the supervisor pid now names another process. A
// supervisor that already exited is fine: its exit file tells the result.
func Attach(st State) (*Process, error) {
	if st.SupervisorPid <= 0 || st.EnginePid <= 0 || st.ExitFile == "" {
		return nil, fmt.Errorf("attach: incomplete state %+v", st)
	}
	p := &Process{st: st, done: make(chan struct{}), stopped: make(chan struct{})}
	// gone finishes an attach to a supervisor that has exited (its pid gone,
	// or reused by another process): the exit file tells the result.
	gone := func() (*Process, error) {
		if _, err := os.Stat(st.ExitFile); err != nil {
			return nil, fmt.Errorf("attach: supervisor %d is gone and left no exit status", st.SupervisorPid)
		}
		close(p.done)
		p.stopWatch = func() {}
		close(p.stopped)
		return p, nil
	}
	pidfd, err := openPidfd(st.SupervisorPid, st.SupervisorStart)
	if errors.Is(err, errGone) {
		return gone()
	}
	if err != nil {
		return nil, fmt.Errorf("attach: %w", err)
	}
	var cancel [2]int
	if err := unix.Pipe2(cancel[:], unix.O_CLOEXEC); err != nil {
		unix.Close(pidfd)
		return nil, fmt.Errorf("attach: %w", err)
	}
	var once sync.Once
	p.stopWatch = func() { once.Do(func() { unix.Close(cancel[1]) }) }
	go p.watch(pidfd, cancel[0])
	return p, nil
}

// watch waits until the supervisor exits (pidfd readable) or Close is
// called (the cancel pipe's write end closes).
func (p *Process) watch(pidfd, cancel int) {
	defer close(p.stopped)
	defer unix.Close(pidfd)
	defer unix.Close(cancel)
	if waitEither(pidfd, cancel) {
		close(p.done)
	}
}

// State is what to persist for Attach.
func (p *Process) State() State { return p.st }

// EnginePid is the engine's pid and process group id.
func (p *Process) EnginePid() int { return p.st.EnginePid }

// Done is closed once the supervisor, and so the engine, has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns the engine's exit status once Done is closed.
func (p *Process) Exit() (Exit, error) {
	select {
	case <-p.done:
	default:
		return Exit{}, errors.New("engine is still running")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exit != nil {
		return *p.exit, nil
	}
	ex, err := ReadExit(p.st.ExitFile)
	if err != nil {
		return Exit{}, fmt.Errorf("supervisor %d exited without recording the engine's exit: %w", p.st.SupervisorPid, err)
	}
	p.exit = &ex
	return ex, nil
}

// Signal sends sig to the engine's whole process group. It is a no-op once
// the engine has exited, so a recycled group id is never signalled.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := syscall.Kill(-p.st.EnginePid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal engine group %d: %w", p.st.EnginePid, err)
	}
	return nil
}

// Close stops watching without touching the processes: the engine keeps
// running for a later Attach.
func (p *Process) Close() {
	p.stopWatch()
	<-p.stopped
}

// startTime reads a process's start time (clock ticks since boot) from
// /proc/<pid>/stat, field 22.
func startTime(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// procStat returns the fields of /proc/<pid>/stat after the command name,
// so f[0] is field 3 (state).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	out := make([]string, len(f))
	for j := range f {
		out[j] = string(f[j])
	}
	return out, nil
}
