package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// chromiumTimeout bounds one headless Chromium run; a loaded 2-core
// machine starts it in seconds, so this only catches a hung browser.
const chromiumTimeout = 2 * time.Minute

// chromium finds the Debian chromium binary. Missing, the test fails
// under CI (CI installs it with the rest of make test's prerequisites)
// and skips elsewhere, saying how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "no chromium on PATH: run `make chromium` (apt-get install chromium) for the status page's browser test"
	if os.Getenv("CI") != "" {
		t.Fatal(how)
	}
	t.Skip(how)
	return ""
}

// runChromium runs headless Chromium with args after the common ones and
// returns its stdout. It runs in its own process group, killed whole on
// the timeout and after it exits, so neither the browser nor its helper
// processes (zygote, renderers, GPU) outlive the call; Wait reaps it.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	common := []string{
		"--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--disable-dev-shm-usage",
	}
	if os.Geteuid() == 0 {
		common = append(common, "--no-sandbox") // Chromium refuses to run as root with its sandbox
	}
	cmd := exec.CommandContext(ctx, bin, append(common, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	err := cmd.Wait()
	if kerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
		t.Logf("kill chromium's process group: %v", kerr)
	}
	if err != nil {
		t.Fatalf("chromium %v: %v (%v)\nstderr:\n%s", args, err, ctx.Err(), tail(stderr.Bytes(), 4000))
	}
	return stdout.Bytes()
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
