package config

import (
	"flag"
	"strings"
	"testing"
)

// TestMigrationSettings: migration is on by default, set by the file's
// migration block, the environment and flags, each later one winning, and
// bad values are refused with their names.
func TestMigrationSettings(t *testing.T) {
	t.Parallel()
	c := Default()
	if !c.Migration.Enabled || c.Migration.MaxAttempts < 1 || c.Migration.MaxTokens < 1 {
		t.Fatalf("default %+v; want on, with room to move", c.Migration)
	}
	if err := c.ParseHCL([]byte("migration {\n  enabled = false\n  max_attempts = 4\n  max_tokens = 100\n}\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.Migration != (Migration{Enabled: false, MaxAttempts: 4, MaxTokens: 100}) {
		t.Fatalf("from the file: %+v", c.Migration)
	}
	if err := c.ParseHCL([]byte("migration {\n  max_turns = 4\n}\n"), "r.hcl"); err == nil || !strings.Contains(err.Error(), "max_turns") {
		t.Errorf("unknown attribute: %v; want it named", err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-migration-max-tokens", "50"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_MIGRATION_ENABLED=false", "LLMGW_MIGRATION_MAX_ATTEMPTS=1", "LLMGW_MIGRATION_MAX_TOKENS=7"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Migration != (Migration{Enabled: false, MaxAttempts: 1, MaxTokens: 50}) {
		t.Errorf("migration %+v; want off and 1 attempt from the environment, 50 tokens from the flag", c.Migration)
	}
	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"not a bool", []string{"LLMGW_MIGRATION_ENABLED=maybe"}, "migration enabled"},
		{"not a number", []string{"LLMGW_MIGRATION_MAX_TOKENS=lots"}, `migration max tokens "lots": want an integer`},
		{"attempts", []string{"LLMGW_MIGRATION_MAX_ATTEMPTS=17"}, "migration max_attempts 17: want 0..16"},
		{"negative tokens", []string{"LLMGW_MIGRATION_MAX_TOKENS=-1"}, "migration max_tokens -1: must not be negative"},
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
