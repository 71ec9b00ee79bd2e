package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestParseHelp: help in every spelling vLLM's argparse or Go's flag
// package takes, before or after the model and other flags, is ErrHelp,
// never a model name or a flag's value.
func TestParseHelp(t *testing.T) {
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"-help"}, {"help"},
		{"serve", "-h"}, {"serve", "--help"}, {"serve", "-help"},
		{"serve", "m", "--port", "1", "-h"},
		{"serve", "m", "--trust-remote-code", "--help"},
		{"serve", "m", "--headless", "-h"},
	} {
		if _, err := Parse(args); !errors.Is(err, ErrHelp) {
			t.Errorf("Parse(%q) = %v; want ErrHelp", args, err)
		}
	}
	// `help` names the command only before anything else; after serve it
	// is a model's name, as in vLLM.
	if c, err := Parse([]string{"serve", "help"}); err != nil || c.Model != "help" {
		t.Errorf("Parse(serve help) = model %q, %v; want the model help", c.Model, err)
	}
}

// TestUsageListsEveryFlag: help lists each flag Parse knows, exactly once,
// with Defaults' value where the flag has one, so help cannot drift from
// the parser.
func TestUsageListsEveryFlag(t *testing.T) {
	var listed []string
	for _, h := range append(slices.Clone(vllmHelp), simHelp...) {
		listed = append(listed, h.name)
	}
	var known []string
	for name := range flags {
		known = append(known, name)
	}
	slices.Sort(listed)
	slices.Sort(known)
	if !slices.Equal(listed, known) {
		t.Fatalf("help lists %q; the parser knows %q", listed, known)
	}
	var b strings.Builder
	if err := Usage(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"usage: vllm-sim serve MODEL [flags]",
		"--port PORT", "(default 8000)",
		"--block-size N", "(default 16)",
		"--sim-latency ", "(default true)",
		"--sim-inter-token-latency DURATION", "(default 12ms)",
		"--sim-kv-cache-groups GROUPS|config", "(default full)",
		"-h, --help",
		Version,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	for _, name := range known {
		if n := strings.Count(out, fmt.Sprintf("  --%s ", name)); n != 1 {
			t.Errorf("usage shows --%s %d times; want once", name, n)
		}
	}
}
