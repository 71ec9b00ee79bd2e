package main

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestExampleConfig keeps router.example.hcl format-clean, valid, and
// buildable into a scheduler.
func TestExampleConfig(t *testing.T) {
	src, err := os.ReadFile("router.example.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if got := hclwrite.Format(src); string(got) != string(src) {
		t.Errorf("router.example.hcl is not hclfmt-clean; formatted:\n%s", got)
	}
	c := config.Default()
	if err := c.LoadFile("router.example.hcl"); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Build(c.Scheduler, scheduler.Deps{Index: index.NewModels(index.Options{})}); err != nil {
		t.Errorf("scheduler section: %v", err)
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("LLMGW_ROUTER_TEST_MAIN") == "1" {
		os.Args = append([]string{"llmgw-router"}, strings.Fields(os.Getenv("LLMGW_ROUTER_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain starts this test binary as llmgw-router with args.
func runMain(t *testing.T, args string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LLMGW_ROUTER_TEST_MAIN=1", "LLMGW_ROUTER_TEST_ARGS="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(stderr)
}

// TestProcess runs the command: it serves, and SIGTERM stops it cleanly.
func TestProcess(t *testing.T) {
	cmd, sc := runMain(t, "-listen 127.0.0.1:0 -ingest-listen 127.0.0.1:0 -kv-token t")
	started := regexp.MustCompile(`llmgw-router started: api=(\S+)`)
	var api string
	for api == "" && sc.Scan() {
		if m := started.FindStringSubmatch(sc.Text()); m != nil {
			api = m[1]
		}
	}
	if api == "" {
		t.Fatal("no start line")
	}
	go func() { _, _ = io.Copy(io.Discard, &scannerReader{sc}) }()
	resp, err := http.Get("http://" + api + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/health: %d", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v; want status 0", err)
	}
}

func TestBadConfigExits2(t *testing.T) {
	cmd, sc := runMain(t, "-attempts 0")
	var out strings.Builder
	for sc.Scan() {
		out.WriteString(sc.Text())
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out.String(), "attempts 0") {
		t.Errorf("exit %v, output %q; want status 2 naming attempts", err, out.String())
	}
}

// scannerReader drains what a Scanner still reads, so the child never
// blocks on a full stderr pipe.
type scannerReader struct{ sc *bufio.Scanner }

func (r *scannerReader) Read(p []byte) (int, error) {
	if !r.sc.Scan() {
		return 0, io.EOF
	}
	return copy(p, r.sc.Bytes()), nil
}
