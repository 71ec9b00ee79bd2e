package config

import (
	"flag"
	"strings"
	"testing"
)

// TestIndexSettings: index_cpu_ratio defaults to 8, comes from the file,
// the environment and a flag, each later one winning, and a negative one
// is refused by name; 0 is allowed.
func TestIndexSettings(t *testing.T) {
	t.Parallel()
	if d := Default().Index; d != (Index{CPURatio: 8}) {
		t.Fatalf("defaults %+v", d)
	}
	c := Default()
	if err := c.ParseHCL([]byte("index_cpu_ratio = 0\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.Index != (Index{CPURatio: 0}) {
		t.Fatalf("from the file: %+v", c.Index)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	c, err := f.Resolve([]string{"LLMGW_INDEX_CPU_RATIO=3"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Index.CPURatio != 3 {
		t.Errorf("from the environment: %+v; want 3", c.Index)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	f = BindFlags(fs)
	if err := fs.Parse([]string{"-index-cpu-ratio", "20"}); err != nil {
		t.Fatal(err)
	}
	if c, err = f.Resolve([]string{"LLMGW_INDEX_CPU_RATIO=3"}); err != nil {
		t.Fatal(err)
	}
	if c.Index.CPURatio != 20 {
		t.Errorf("flag over environment: %+v; want 20", c.Index)
	}

	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"not a number", []string{"LLMGW_INDEX_CPU_RATIO=lots"}, `index cpu ratio "lots": want an integer`},
		{"negative", []string{"LLMGW_INDEX_CPU_RATIO=-2"}, "index_cpu_ratio -2: must not be negative"},
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
