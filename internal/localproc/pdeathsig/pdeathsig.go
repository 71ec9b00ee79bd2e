// Package pdeathsig starts child processes that the kernel signals when
// their parent dies, even by SIGKILL, so that no child outlives the process
// that owns it (`llmgw demo`, `llmgw bench`, a test binary).
//
// Linux sends the parent-death signal (prctl PR_SET_PDEATHSIG) when the
// *thread* that forked the child exits, not the process (golang/go#27505).
// Go ends an OS thread when a goroutine locked to it returns, and any
// goroutine may run on the thread a child was forked from. So Start forks on
// a goroutine locked to its thread and keeps it locked, blocked on the
// child's pidfd, until the child has exited: no other goroutine can run
// there, so nothing can end that thread early.
//
// It owns no process: whoever starts the child (os/exec, go-plugin) waits
// for it. It imports only the standard library and golang.org/x/sys/unix.
package pdeathsig

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Thread is the locked OS thread a child was forked from. It is released
// once the child has exited.
type Thread struct {
	done chan struct{}
}

// Done is closed once the child has exited (or never started) and the
// thread is released. A caller that kills and reaps the child waits on it
// so that no goroutine outlives the child.
func (t *Thread) Done() <-chan struct{} { return t.done }

// Start sets cmd's parent-death signal to sig and calls start on a
// goroutine locked to its OS thread. start must call cmd.Start on its own
// goroutine: directly (start = cmd.Start), or through a library that does,
// such as go-plugin's Client.Start. It returns start's error, and a Thread
// in every case: when start fails after the child was forked (a plugin
// handshake timed out), the thread stays until the caller kills the child.
//
// sig should be SIGKILL unless the child handles another signal quickly
// and surely: once the owner is gone nobody is left to escalate.
func Start(cmd *exec.Cmd, sig syscall.Signal, start func() error) (*Thread, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	pidfd := -1
	cmd.SysProcAttr.Pdeathsig = sig
	// The pidfd comes from the fork itself (CLONE_PIDFD): it names the
	// child even if someone else reaps it and its pid is reused.
	cmd.SysProcAttr.PidFD = &pidfd
	t := &Thread{done: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		defer close(t.done)
		runtime.LockOSThread()
		errc <- start()
		if pidfd < 0 {
			// Not forked, or a kernel without CLONE_PIDFD (before 5.2):
			// nothing to wait for, and nothing better to offer.
			runtime.UnlockOSThread()
			return
		}
		waitExit(pidfd)
		unix.Close(pidfd)
		runtime.UnlockOSThread()
	}()
	return t, <-errc
}

// waitExit blocks until pidfd's process has exited: a pidfd polls readable
// from the moment its process is a zombie, whoever reaps it.
func waitExit(pidfd int) {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil && fds[0].Revents != 0 {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return // EBADF or ENOMEM: cannot wait; release the thread
		}
	}
}
