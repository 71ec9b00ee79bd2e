package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpExitsZero: help asked for is not an error, at every level and in
// every spelling: it goes to stdout and exits 0, as nomad and consul do.
// Bad usage still exits 2, on stderr.
func TestHelpExitsZero(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"-h"}, "usage: llmgw demo"},
		{[]string{"--help"}, "usage: llmgw demo"},
		{[]string{"help"}, "llmgw jobs validate"},
		{[]string{"jobs", "-h"}, "usage: llmgw jobs validate"},
		{[]string{"jobs", "--help"}, "usage: llmgw jobs validate"},
		{[]string{"jobs", "help"}, "usage: llmgw jobs validate"},
		{[]string{"jobs", "validate", "-h"}, "usage: llmgw jobs validate"},
		{[]string{"jobs", "run", "-h"}, "-address"},
		{[]string{"jobs", "run", "--help"}, "-address"},
		{[]string{"status", "-h"}, "-router"},
		{[]string{"status", "-help"}, "-consul"},
		{[]string{"bench", "-h"}, "-workload"},
		{[]string{"bench", "--help"}, "-policies"},
		{[]string{"demo", "-h"}, "-workdir"},
		{[]string{"demo", "-h"}, "-discovery"},
		{[]string{"demo", "--help"}, "-policies"},
		{[]string{"demo", "-h"}, "-variants"},
		{[]string{"demo", "-h"}, "-slo-ttft"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != 0 {
				t.Errorf("exit code %d; want 0 (stderr %q)", got, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.want) {
				t.Errorf("stdout %q; want it to contain %q", stdout.String(), tt.want)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr %q; want nothing", stderr.String())
			}
		})
	}
}

func TestBadUsageExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"jobs"},
		{"jobs", "validate", "-x"},
		{"jobs", "run", "-bogus"},
		{"status", "-bogus"},
		{"bench", "-bogus"},
		{"demo", "-bogus"},
	} {
		var stdout, stderr bytes.Buffer
		if got := run(args, &stdout, &stderr); got != 2 {
			t.Errorf("llmgw %q: exit code %d; want 2", args, got)
		}
		if !strings.Contains(stderr.String(), "usage: llmgw") {
			t.Errorf("llmgw %q: stderr %q; want the usage", args, stderr.String())
		}
	}
}

// TestJobsHelpProcess: what an operator sees for `llmgw jobs -h`, as a
// real process: exit status 0 and the usage.
func TestJobsHelpProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "jobs", "-h")
	cmd.Env = append(os.Environ(), "LLMGW_TEST_RUN_MAIN=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("llmgw jobs -h: %v; want exit status 0", err)
	}
	if !strings.Contains(stdout.String(), "usage: llmgw jobs validate") {
		t.Errorf("stdout %q; want the usage", stdout.String())
	}
}
