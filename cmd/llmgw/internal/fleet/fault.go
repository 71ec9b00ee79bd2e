package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// KillEngine sends SIGKILL to the engine of shard i (in start order), as
// a crash would, mid-request: its registration stays until its check
// fails, and the routers see its streams break. It returns the shard's
// replica id. Close still stops and destroys the task.
func (f *Fleet) KillEngine(i int) (string, error) {
	f.mu.Lock()
	if i < 0 || i >= len(f.shards) {
		n := len(f.shards)
		f.mu.Unlock()
		return "", fmt.Errorf("kill engine %d: the fleet has shards 0..%d", i, n-1)
	}
	s := f.shards[i]
	f.mu.Unlock()
	if s.enginePid <= 0 {
		return "", fmt.Errorf("kill engine %d: its pid is not known", i)
	}
	// Only while that pid still runs our vllm-sim: pids are reused.
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(s.enginePid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(f.o.BinDir, "vllm-sim")) {
		return "", fmt.Errorf("kill engine %d: pid %d no longer runs vllm-sim", i, s.enginePid)
	}
	if err := syscall.Kill(-s.enginePid, syscall.SIGKILL); err != nil {
		return "", fmt.Errorf("kill engine %d: %w", i, err)
	}
	return s.replica, nil
}

// KillSupervisor sends SIGKILL to the supervisor of shard i's engine (the
// engine's parent, nomad-driver-vllm in supervise mode), as the OOM killer
// or an operator's mistake would. The driver then finds the exit
// unrecorded and kills the engine's group, and the task has exited, as
// after KillEngine; RestartShard plays Nomad's restart. It returns the
// shard's replica id.
func (f *Fleet) KillSupervisor(i int) (string, error) {
	s, err := f.shardAt(i)
	if err != nil {
		return "", fmt.Errorf("kill supervisor %d: %w", i, err)
	}
	ppid, err := parentPid(s.enginePid)
	if err != nil {
		return "", fmt.Errorf("kill supervisor %d: %w", i, err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(f.o.BinDir, "nomad-driver-vllm")) {
		return "", fmt.Errorf("kill supervisor %d: the engine's parent %d is not the driver's supervisor", i, ppid)
	}
	if err := syscall.Kill(ppid, syscall.SIGKILL); err != nil {
		return "", fmt.Errorf("kill supervisor %d: %w", i, err)
	}
	return s.replica, nil
}

// shardAt is shard i, in start order.
func (f *Fleet) shardAt(i int) (*shard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= len(f.shards) {
		return nil, fmt.Errorf("the fleet has shards 0..%d", len(f.shards)-1)
	}
	return f.shards[i], nil
}

// parentPid reads a process's parent from /proc/<pid>/stat: the field
// after the command, which is in parentheses and may hold any byte.
func parentPid(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read the parent of %d: %w", pid, err)
	}
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	fields := strings.Fields(rest) // state, ppid, ...
	if len(fields) < 2 {
		return 0, fmt.Errorf("read the parent of %d: short stat %q", pid, b)
	}
	return strconv.Atoi(fields[1])
}

// KillDriver sends SIGKILL to the driver plugin, as a crash would. Its
// tasks run on under their supervisors; RestartDriver recovers them.
func (f *Fleet) KillDriver() error {
	f.op.Lock()
	defer f.op.Unlock()
	if f.driver == nil {
		return errors.New("kill driver: no driver")
	}
	return f.driver.Crash()
}

// KillConsul sends SIGKILL to the Consul agent; RestartConsul starts it
// again. Without Consul (DiscoveryNomad) it fails.
func (f *Fleet) KillConsul() error {
	if f.consul == nil {
		return errors.New("kill consul: the fleet runs no consul agent")
	}
	f.consul.p.kill()
	return nil
}

// PauseConsul stops the Consul agent with SIGSTOP: its sockets stay open
// but nothing answers, as with an agent stuck in a long pause or on an
// overloaded host. ResumeConsul sends SIGCONT.
func (f *Fleet) PauseConsul() error { return f.signalConsul(syscall.SIGSTOP) }

// ResumeConsul lets a paused Consul agent run again.
func (f *Fleet) ResumeConsul() error { return f.signalConsul(syscall.SIGCONT) }

func (f *Fleet) signalConsul(sig syscall.Signal) error {
	if f.consul == nil || f.consul.p.exited() {
		return fmt.Errorf("signal consul (%v): no running agent", sig)
	}
	if err := syscall.Kill(f.consul.p.pid(), sig); err != nil {
		return fmt.Errorf("signal consul (%v): %w", sig, err)
	}
	return nil
}
