package consultest

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestBinFallsBackToModuleRoot(t *testing.T) {
	t.Setenv(BinEnv, "")
	p, err := Bin()
	if err != nil {
		t.Skipf("no bin/consul under the module root: %v", err)
	}
	if filepath.Base(p) != "consul" || filepath.Base(filepath.Dir(p)) != "bin" {
		t.Errorf("Bin() = %s; want <module root>/bin/consul", p)
	}
	t.Setenv(BinEnv, "/nonexistent/consul")
	if _, err := Bin(); err == nil {
		t.Error("Bin() with a missing $" + BinEnv + ": got nil error")
	}
}

// TestStopReapsAndRestartReuses checks that Stop leaves no process behind
// and Restart brings an agent back on the same address.
func TestStopReapsAndRestartReuses(t *testing.T) {
	a := Start(t)
	pid := a.cmd.Process.Pid
	a.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("agent pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
	a.Stop() // idempotent
	if _, err := a.Client.Status().Leader(); err == nil {
		t.Error("stopped agent still answers")
	}
	a.Restart(t)
	leader, err := a.Client.Status().Leader()
	if err != nil || leader == "" {
		t.Errorf("restarted agent: leader %q, %v", leader, err)
	}
}
