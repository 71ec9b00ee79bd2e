package pdeathsig_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
	"github.com/llmgw/llmgw/internal/testkit/pdeathsigtest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// modeEnv selects what a re-executed test binary does: "sleep" (a child
// that lives until killed, or a minute as a safety net) or "owner" (start a
// sleeping child through Start, print its pid, churn threads, block).
const modeEnv = "PDEATHSIG_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "sleep":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "owner":
		os.Exit(owner())
	}
	goleak.VerifyTestMain(m)
}

// sleeper is a command for this binary in sleep mode.
func sleeper() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeEnv+"=sleep")
	return cmd
}

// owner starts a sleeper, prints its pid, ends many threads, says so, and
// waits to be killed.
func owner() int {
	cmd := sleeper()
	if _, err := pdeathsig.Start(cmd, syscall.SIGKILL, cmd.Start); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		return 1
	}
	os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
	pdeathsigtest.EndThreads(200)
	os.Stdout.WriteString("churned\n")
	_ = cmd.Wait()
	return 0
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestChildOutlivesThreadChurn: a child started through Start survives
// the end of many of its parent's threads, and Done closes once it has
// been killed and reaped, leaving no goroutine behind.
func TestChildOutlivesThreadChurn(t *testing.T) {
	cmd := sleeper()
	th, err := pdeathsig.Start(cmd, syscall.SIGKILL, cmd.Start)
	if err != nil {
		t.Fatal(err)
	}
	pdeathsigtest.EndThreads(200)
	if !alive(cmd.Process.Pid) {
		t.Fatal("the child died when its parent's threads ended")
	}
	select {
	case <-th.Done():
		t.Fatal("Done closed while the child runs")
	default:
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	select {
	case <-th.Done():
	case <-time.After(poll.Timeout):
		t.Fatal("Done not closed after the child was reaped")
	}
}

// TestChildDiesWithOwner: SIGKILL the process that started a child
// through Start (after it churned its threads); the child dies too.
func TestChildDiesWithOwner(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeEnv+"=owner")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("owner printed nothing")
	}
	child, err := strconv.Atoi(lines.Text())
	if err != nil {
		t.Fatalf("owner: %s", lines.Text())
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if !lines.Scan() || lines.Text() != "churned" {
		t.Fatalf("owner did not finish churning threads: %q", lines.Text())
	}
	if !alive(child) {
		t.Fatal("the child died when its owner's threads ended")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	poll.Until(t, "the child to die with its owner", func() bool { return !alive(child) })
}

func TestStartError(t *testing.T) {
	cmd := exec.Command("/nonexistent/binary")
	th, err := pdeathsig.Start(cmd, syscall.SIGKILL, cmd.Start)
	if err == nil {
		t.Fatal("Start of a missing binary succeeded")
	}
	select {
	case <-th.Done():
	case <-time.After(poll.Timeout):
		t.Fatal("Done not closed after a failed start")
	}
}
