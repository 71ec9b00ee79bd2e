package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/localproc/netport"
)

func TestRunStatusUsage(t *testing.T) {
	dead := netport.FreeAddr(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown flag", []string{"-bogus"}, 2, "usage: llmgw status"},
		{"stray argument", []string{"extra"}, 2, `unexpected arguments ["extra"]`},
		{"router down", []string{"-router", dead}, 1, "llmgw status: router " + dead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := runStatus(context.Background(), tt.args, &stdout, &stderr); got != tt.code {
				t.Errorf("exit code %d; want %d (stderr %q)", got, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q; want it to contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}
