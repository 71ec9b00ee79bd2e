package supervisor_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// startOwner starts a process to own a supervised engine, killed and
// reaped when the test ends at the latest.
func startOwner(t *testing.T) (*exec.Cmd, supervisor.Owner) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	o, err := supervisor.OwnerOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

// killOwner kills the owner with SIGKILL and reaps it.
func killOwner(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// TestOwnerDeathStopsEngine: when the owner dies, the engine's whole group
// gets SIGTERM, as from StopTask, and the supervisor records it and exits.
func TestOwnerDeathStopsEngine(t *testing.T) {
	e := newEnv(t)
	owner, o := startOwner(t)
	s := e.spec(`sleep 300 & wait`)
	s.Owner = o
	p, err := supervisor.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitGroupSize(t, p, 2)
	select {
	case <-p.Done():
		t.Fatal("engine stopped while its owner lives")
	default:
	}
	killOwner(t, owner)
	if ex := wait(t, p); ex.Signal != int(syscall.SIGTERM) {
		t.Errorf("exit %+v; want SIGTERM", ex)
	}
	poll.Until(t, "the engine's group to vanish", func() bool { return syscall.Kill(-p.EnginePid(), 0) == syscall.ESRCH })
}

// TestOwnerDeathEscalates: an engine that ignores SIGTERM gets SIGKILL
// once the grace has passed.
func TestOwnerDeathEscalates(t *testing.T) {
	e := newEnv(t)
	owner, o := startOwner(t)
	s := e.spec(`trap '' TERM; echo ready; while :; do sleep 0.05; done`)
	s.Owner, s.OwnerGrace = o, 200*time.Millisecond
	p, err := supervisor.Start(s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	poll.Until(t, "the engine to ignore SIGTERM", func() bool {
		b, _ := os.ReadFile(e.stdout)
		return string(b) == "ready\n"
	})
	killOwner(t, owner)
	if ex := wait(t, p); ex.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit %+v; want SIGKILL after the grace", ex)
	}
}

// TestOwnerGone: an owner that has exited, or whose pid now names a
// process started at another time, is gone: the engine does not start.
func TestOwnerGone(t *testing.T) {
	owner, o := startOwner(t)
	killOwner(t, owner)
	reused := supervisor.Owner{Pid: os.Getpid(), Start: 1} // this process, but not started at tick 1
	for _, o := range []supervisor.Owner{o, reused} {
		e := newEnv(t)
		s := e.spec(`echo started`)
		s.Owner = o
		p, err := supervisor.Start(s)
		if err == nil {
			p.Close()
			t.Errorf("owner %v: engine started", o)
			continue
		}
		if !strings.Contains(err.Error(), "owner process") {
			t.Errorf("owner %v: error %q; want it to name the owner", o, err)
		}
		if b, _ := os.ReadFile(e.stdout); len(b) != 0 {
			t.Errorf("owner %v: engine ran: %q", o, b)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	for _, pid := range []int{0, -1} {
		if _, err := supervisor.OwnerOf(pid); err == nil {
			t.Errorf("OwnerOf(%d) succeeded", pid)
		}
	}
	o, err := supervisor.OwnerOf(os.Getpid())
	if err != nil || o.Pid != os.Getpid() || o.Start == 0 {
		t.Errorf("OwnerOf(self) = %+v, %v", o, err)
	}
}
