package supervisor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Owner names a process whose exit stops a supervised engine (Spec.Owner):
// a one-machine fleet's CLI or test process. Its start time goes with its
// pid, so a recycled pid is never taken for it. Nomad jobs have no owner:
// their engines must outlive plugin and agent restarts.
type Owner struct {
	Pid   int
	Start uint64 // clock ticks since boot, /proc/<pid>/stat field 22
}

// OwnerOf identifies the live process pid as an owner. Call it while that
// process is known to be alive (the driver does, when the owner configures
// it), so the start time read is its own.
func OwnerOf(pid int) (Owner, error) {
	if pid <= 0 {
		return Owner{}, fmt.Errorf("owner pid %d: must be positive", pid)
	}
	start, err := startTime(pid)
	if err != nil {
		return Owner{}, fmt.Errorf("owner process %d: %w", pid, err)
	}
	return Owner{Pid: pid, Start: start}, nil
}

// String is the -owner flag's form, pid:start.
func (o Owner) String() string {
	return strconv.Itoa(o.Pid) + ":" + strconv.FormatUint(o.Start, 10)
}

// parseOwner reads the -owner flag.
func parseOwner(s string) (Owner, error) {
	p, st, ok := strings.Cut(s, ":")
	pid, perr := strconv.Atoi(p)
	start, serr := strconv.ParseUint(st, 10, 64)
	if !ok || perr != nil || serr != nil || pid <= 0 {
		return Owner{}, fmt.Errorf("-owner %q: want PID:START_TICKS", s)
	}
	return Owner{Pid: pid, Start: start}, nil
}

// defaultOwnerGrace is how long an engine has between SIGTERM and SIGKILL
// once its owner is gone, as Nomad's default kill_timeout.
const defaultOwnerGrace = 5 * time.Second

// errGone says a process has exited, or its pid now names another one.
var errGone = errors.New("process has exited")

// openPidfd returns a pidfd for the process pid that started at start, or
// errGone. The start time is checked after the pidfd is open, because from
// then on the pidfd pins the process: if the check passes, the pidfd names
// that very process, running or a zombie.
func openPidfd(pid int, start uint64) (int, error) {
	if st, err := startTime(pid); err != nil || st != start {
		return -1, errGone
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, errGone
	}
	if err != nil {
		return -1, fmt.Errorf("pidfd for %d: %w", pid, err)
	}
	if st, err := startTime(pid); err != nil || st != start {
		unix.Close(fd)
		return -1, errGone
	}
	return fd, nil
}

// waitEither blocks until pidfd's process exits (true) or cancel, a pipe's
// read end, becomes readable because its write end closed (false).
func waitEither(pidfd, cancel int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(cancel), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		if fds[0].Revents != 0 {
			return true
		}
		if fds[1].Revents != 0 {
			return false
		}
	}
}

// exited reports whether pidfd's process has exited already.
func exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0
}

// ownerWatch stops an engine's process group when its owner exits, the way
// StopTask does: SIGTERM to the group, then SIGKILL once grace has passed
// unless the engine has exited by then. The supervisor's Wait reaps it.
type ownerWatch struct {
	cancel  int           // write end of the cancel pipe
	stopped chan struct{} // closed when the watching goroutine returns
	once    sync.Once
}

// watchOwner starts watching pidfd (it takes ownership of it) for the
// engine whose process group is pgid; engineDone closes once the engine
// has been reaped.
func watchOwner(pidfd, pgid int, grace time.Duration, engineDone <-chan struct{}) (*ownerWatch, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(pidfd)
		return nil, fmt.Errorf("watch owner: %w", err)
	}
	w := &ownerWatch{cancel: p[1], stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		defer unix.Close(pidfd)
		defer unix.Close(p[0])
		if !waitEither(pidfd, p[0]) {
			return
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-engineDone:
		case <-t.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	return w, nil
}

// stop ends the watch and waits for its goroutine. Call it once the
// engine has exited, so a stop in progress finishes at once.
func (w *ownerWatch) stop() {
	w.once.Do(func() { unix.Close(w.cancel) })
	<-w.stopped
}
