package pluginhost_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/pdeathsigtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
)

// hostEnv makes the test binary a plugin host that launches the test
// driver, prints the plugin's pid and waits for stdin to close.
const hostEnv = "PLUGINHOST_TEST_HOST"

func hostMain() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	h, err := pluginhost.Launch(exe, pluginhost.Options{Env: []string{driverEnv + "=1"}})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer h.Close()
	fmt.Println(h.Pid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestPluginOutlivesHostThreads: the plugin has a parent-death signal, yet
// survives the end of many of the host's threads; so go-plugin forks it on
// the goroutine that Launch locks to its thread.
func TestPluginOutlivesHostThreads(t *testing.T) {
	h := launch(t)
	pdeathsigtest.EndThreads(200)
	if _, err := h.Base.PluginInfo(ctx(t), &base.PluginInfoRequest{}); err != nil || h.Exited() {
		t.Fatalf("plugin died when its host's threads ended: %v", err)
	}
}

// TestPluginDiesWithHost: SIGKILL a host process; its plugin dies too.
func TestPluginDiesWithHost(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), hostEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := bufio.NewScanner(out)
	line.Scan()
	pid, err := strconv.Atoi(line.Text())
	if err != nil {
		t.Fatalf("host: %q", line.Text())
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !running(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	poll.Until(t, "the plugin to die with its host", func() bool { return !running(pid) })
}

// running reports whether pid is a live process (not a zombie).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	return i+2 < len(b) && b[i+2] != 'Z'
}
