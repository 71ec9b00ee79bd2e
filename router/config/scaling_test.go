package config

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/autoscale"
)

// TestScalingSettings: the scaling targets default to autoscale's, are set
// by the file's scaling block, the environment and flags, each later one
// winning, and bad values are refused with their names.
func TestScalingSettings(t *testing.T) {
	t.Parallel()
	c := Default()
	if got := c.Scaling.Policy(); got != autoscale.DefaultPolicy() {
		t.Fatalf("default %+v; want autoscale's %+v", got, autoscale.DefaultPolicy())
	}
	if err := c.ParseHCL([]byte("scaling {\n  ttft_target = \"750ms\"\n  in_flight_per_replica = 8\n}\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.Scaling != (Scaling{TTFTTarget: 750 * time.Millisecond, InFlightPerReplica: 8}) {
		t.Fatalf("from the file: %+v", c.Scaling)
	}
	if err := c.ParseHCL([]byte("scaling {\n  ttft_target = \"soon\"\n}\n"), "r.hcl"); err == nil || !strings.Contains(err.Error(), "scaling ttft_target") {
		t.Errorf("bad duration: %v; want it named", err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-scaling-in-flight-per-replica", "4"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_SCALING_TTFT_TARGET=2s", "LLMGW_SCALING_IN_FLIGHT_PER_REPLICA=32"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Scaling != (Scaling{TTFTTarget: 2 * time.Second, InFlightPerReplica: 4}) {
		t.Errorf("scaling %+v; want 2s from the environment, 4 from the flag", c.Scaling)
	}
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"zero target", []string{"LLMGW_SCALING_TTFT_TARGET=0s"}, "scaling ttft_target 0s: must be positive"},
		{"zero in flight", []string{"LLMGW_SCALING_IN_FLIGHT_PER_REPLICA=0"}, "scaling in_flight_per_replica 0: want at least 1"},
		{"not a number", []string{"LLMGW_SCALING_IN_FLIGHT_PER_REPLICA=many"}, `scaling in flight per replica "many": want an integer`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := BindFlags(flag.NewFlagSet("t", flag.ContinueOnError))
			if _, err := f.Resolve(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
