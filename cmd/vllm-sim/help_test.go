package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runMain runs this test binary as `vllm-sim args...` to its end, as an
// operator's shell would: its exit code, stdout and stderr. A command
// still running at the test's deadline (serving instead of answering) is
// killed and fails the test.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), serveWait(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "VLLM_SIM_MAIN=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("vllm-sim %q was still running at the deadline (serving?):\n%s", args, errOut.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("vllm-sim %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestHelp: help in each spelling prints the flags and their defaults to
// stdout and exits 0 without serving, as `vllm serve -h` does; before it,
// `serve -h` took -h as the model's name and served on port 8000.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "-h"}, {"serve", "--help"}, {"serve", "-help"},
		{"-h"}, {"--help"}, {"help"},
		// With a port: a simulator that served would say so on stderr.
		{"serve", "sim-model", "--host", "127.0.0.1", "--port", "0", "-h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, args...)
			if code != 0 {
				t.Errorf("exit code %d; want 0 (stderr %q)", code, stderr)
			}
			for _, want := range []string{"usage: vllm-sim serve MODEL", "--port PORT", "(default 8000)", "--max-num-seqs N", "--sim-latency", "--kv-events-config JSON"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			if stderr != "" {
				t.Errorf("stderr %q; want nothing (no server started, nothing logged)", stderr)
			}
		})
	}
}

// TestBadFlagExitsTwo: a flag that cannot be vLLM's or the simulator's is
// named on stderr with the way to the list, and exits 2 without serving.
func TestBadFlagExitsTwo(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "sim-model", "-x"}, "unknown flag -x"},
		{[]string{"serve", "sim-model", "--sim-latancy=false"}, "unknown flag --sim-latancy"},
	} {
		code, stdout, stderr := runMain(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "vllm-sim serve -h") || stdout != "" {
			t.Errorf("vllm-sim %q: exit %d, stdout %q, stderr %q; want 2 and %q on stderr", tt.args, code, stdout, stderr, tt.want)
		}
	}
}
