package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets a test run this binary's main() as a real process: the test
// binary re-executes itself with LLMGW_TEST_RUN_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("LLMGW_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func jobsDir(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "jobs"}, parts...)...)
}

func TestRunJobs(t *testing.T) {
	shipped, err := filepath.Glob(jobsDir("*.nomad.hcl"))
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no shipped jobspecs: %v", err)
	}
	broken := jobsDir("testdata", "missing-tag.nomad.hcl")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // lines that must appear
		stderrPart string
	}{
		{"shipped ones are ok", append([]string{"validate"}, shipped...), 0, []string{shipped[0] + ": ok"}, ""},
		{"every problem of every file", []string{"validate", broken, jobsDir("testdata", "group-service.nomad.hcl")}, 1, []string{
			broken + `:19:9: task "vllm": service "vllm": tags must include "llmgw"`,
			jobsDir("testdata", "group-service.nomad.hcl") + `:8:5: service on vllm port "http"`,
			jobsDir("testdata", "group-service.nomad.hcl") + `:14:5: task "vllm": no service block`,
		}, ""},
		{"one bad file fails the run", []string{"validate", shipped[0], broken}, 1, []string{shipped[0] + ": ok", broken + ":19:9:"}, ""},
		{"warnings alone pass", []string{"validate", jobsDir("testdata", "var-unreadable.nomad.hcl")}, 0, []string{jobsDir("testdata", "var-unreadable.nomad.hcl") + ":8:23: warning: task \"router\"", jobsDir("testdata", "var-unreadable.nomad.hcl") + ": ok, with 2 warnings"}, ""},
		{"unreadable file", []string{"validate", jobsDir("absent.nomad.hcl")}, 1, nil, "absent.nomad.hcl"},
		{"no files", []string{"validate"}, 2, nil, "no files given"},
		{"unknown subcommand", []string{"frobnicate"}, 2, nil, "usage: llmgw jobs validate"},
		{"run: no file", []string{"run"}, 2, nil, "want one jobspec, got 0"},
		{"run: invalid jobspec", []string{"run", "-address", "http://127.0.0.1:1", broken}, 1, nil, broken + `:19:9: task "vllm"`},
		{"run: agent down", []string{"run", "-address", "http://127.0.0.1:1", shipped[0]}, 1, nil, "nomad parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := runJobs(context.Background(), tt.args, &stdout, &stderr); got != tt.code {
				t.Errorf("exit code %d; want %d (stdout %q, stderr %q)", got, tt.code, stdout.String(), stderr.String())
			}
			for _, want := range tt.stdout {
				if !containsLinePrefix(stdout.String(), want) {
					t.Errorf("stdout %q has no line starting %q", stdout.String(), want)
				}
			}
			if !strings.Contains(stderr.String(), tt.stderrPart) {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tt.stderrPart)
			}
		})
	}
}

func containsLinePrefix(out, prefix string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// TestJobsValidateProcess runs `llmgw jobs validate` as a real process and
// checks what an operator and CI see: exit status 1 and the problem.
func TestJobsValidateProcess(t *testing.T) {
	broken := jobsDir("testdata", "unknown-port.nomad.hcl")
	cmd := exec.Command(os.Args[0], "jobs", "validate", jobsDir("llama-3.1-8b.nomad.hcl"), broken)
	cmd.Env = append(os.Environ(), "LLMGW_TEST_RUN_MAIN=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("got %v; want exit status 1 (output %q)", err, out)
	}
	want := broken + `:14:9: task "vllm": port: no port labelled "api"`
	if !strings.Contains(string(out), want) {
		t.Errorf("output %q; want it to contain %q", out, want)
	}
}
