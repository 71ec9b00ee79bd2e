package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

// TestPDSettings: the disaggregation threshold comes from the file, the
// environment and flags, the prefill scheduler and static replicas' roles
// from the file.
func TestPDSettings(t *testing.T) {
	t.Parallel()
	c := Default()
	if c.PD.SkipPrefillFraction != 0.9 || c.PD.SkipPrefillTokens != 0 || c.PD.PrefillScheduler != nil {
		t.Fatalf("default %+v", c.PD)
	}
	src := `
pd_skip_prefill_tokens   = 256
pd_skip_prefill_fraction = 0.5
prefill_scheduler {
  filter "healthy" {}
  scorer "prefix" { weight = 2 }
  scorer "ttft" { weight = 1 }
  picker "max-score" {}
}
replica "p0" {
  model   = "m"
  address = "127.0.0.1:9000"
  role    = "prefill"
}
`
	if err := c.ParseHCL([]byte(src), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.PD.SkipPrefillTokens != 256 || c.PD.SkipPrefillFraction != 0.5 {
		t.Errorf("from the file: %+v", c.PD)
	}
	if ps := c.PD.PrefillScheduler; ps == nil || len(ps.Scorers) != 2 || ps.Scorers[0].Type != "prefix" || ps.Scorers[0].Weight != 2 || ps.Picker.Type != "max-score" {
		t.Errorf("prefill scheduler %+v", c.PD.PrefillScheduler)
	}
	if len(c.Replicas) != 1 || c.Replicas[0].Role != "prefill" {
		t.Errorf("replicas %+v; want p0 with the prefill role", c.Replicas)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-pd-skip-prefill-fraction", "0.75"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_PD_SKIP_PREFILL_TOKENS=1024", "LLMGW_PD_SKIP_PREFILL_FRACTION=0.2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.PD.SkipPrefillTokens != 1024 || c.PD.SkipPrefillFraction != 0.75 {
		t.Errorf("%+v; want 1024 tokens from the environment, 0.75 from the flag", c.PD)
	}
}

// TestPDSettingsRefused: bad disaggregation settings are refused with
// their names.
func TestPDSettingsRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  []string
		hcl  string
		want string
	}{
		{"not a number", []string{"LLMGW_PD_SKIP_PREFILL_FRACTION=most"}, "", `LLMGW_PD_SKIP_PREFILL_FRACTION: pd skip prefill fraction "most": want a number`},
		{"over one", []string{"LLMGW_PD_SKIP_PREFILL_FRACTION=1.5"}, "", "pd_skip_prefill_fraction 1.5: want 0..1"},
		{"negative tokens", []string{"LLMGW_PD_SKIP_PREFILL_TOKENS=-1"}, "", "pd_skip_prefill_tokens -1: must not be negative"},
		{"both zero", []string{"LLMGW_PD_SKIP_PREFILL_FRACTION=0"}, "", "are both 0"},
		{"bad role", nil, `replica "x" {
  model = "m"
  address = "127.0.0.1:1"
  role = "encode"
}`, `replica "x": role "encode": want agg, prefill or decode`},
		{"prefill scheduler without picker", nil, `prefill_scheduler {
  scorer "prefix" { weight = 1 }
}`, "prefill_scheduler: config scheduler: a picker block is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f := BindFlags(fs)
			env := tt.env
			if tt.hcl != "" {
				path := t.TempDir() + "/r.hcl"
				if err := os.WriteFile(path, []byte(tt.hcl), 0o600); err != nil {
					t.Fatal(err)
				}
				env = append(env, "LLMGW_CONFIG="+path)
			}
			if _, err := f.Resolve(env); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
