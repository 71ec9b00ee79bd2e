package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestAdmissionSettings: the queue settings come from the file, the
// environment and flags, each later one winning, and bad values are
// refused with their names.
func TestAdmissionSettings(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.ParseHCL([]byte("queue_timeout = \"5s\"\nmax_queue = 200\nmax_queue_per_tenant = 20\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.QueueTimeout != 5*time.Second || c.MaxQueue != 200 || c.MaxQueuePerTenant != 20 {
		t.Fatalf("from the file: %s %d %d", c.QueueTimeout, c.MaxQueue, c.MaxQueuePerTenant)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-max-queue-per-tenant", "30"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_MAX_QUEUE=300", "LLMGW_MAX_QUEUE_PER_TENANT=10"})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxQueue != 300 || c.MaxQueuePerTenant != 30 {
		t.Errorf("max_queue %d, max_queue_per_tenant %d; want 300 from the environment, 30 from the flag", c.MaxQueue, c.MaxQueuePerTenant)
	}

	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"not a number", []string{"LLMGW_MAX_QUEUE_PER_TENANT=lots"}, `LLMGW_MAX_QUEUE_PER_TENANT: max queue per tenant "lots": want an integer`},
		{"over max_queue", []string{"LLMGW_MAX_QUEUE=10", "LLMGW_MAX_QUEUE_PER_TENANT=11"}, "max_queue_per_tenant 11: want 0 (max_queue) to max_queue (10)"},
		{"negative", []string{"LLMGW_MAX_QUEUE_PER_TENANT=-1"}, "max_queue_per_tenant -1"},
		{"negative max_queue", []string{"LLMGW_MAX_QUEUE=-1"}, "max_queue -1 must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := BindFlags(flag.NewFlagSet("t", flag.ContinueOnError))
			if _, err := f.Resolve(tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
