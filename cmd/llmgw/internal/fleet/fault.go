package fleet

import (
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
