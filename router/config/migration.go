package config

import (
	"fmt"
)

// Migration is mid-stream migration (router/migrate): when a replica fails
// after a stream's first byte, the router re-issues the request to the
// next-best replica with the tokens already streamed, and the client's
// stream goes on. MaxAttempts bounds how many times one stream may move,
// MaxTokens how many generated tokens a continuation may carry (its
// prompt grows by them, and they are prefilled again where they are not
// cached).
type Migration struct {
	Enabled     bool
	MaxAttempts int
	MaxTokens   int
}

func defaultMigration() Migration {
	return Migration{Enabled: true, MaxAttempts: 2, MaxTokens: 8192}
}

// fileMigration is the migration block.
type fileMigration struct {
	Enabled     *bool `hcl:"enabled,optional"`
	MaxAttempts *int  `hcl:"max_attempts,optional"`
	MaxTokens   *int  `hcl:"max_tokens,optional"`
}

func (m *Migration) applyFile(f *fileMigration) {
	if f == nil {
		return
	}
	if f.Enabled != nil {
		m.Enabled = *f.Enabled
	}
	if f.MaxAttempts != nil {
		m.MaxAttempts = *f.MaxAttempts
	}
	if f.MaxTokens != nil {
		m.MaxTokens = *f.MaxTokens
	}
}

func (m *Migration) validate() []error {
	var errs []error
	if m.MaxAttempts < 0 || m.MaxAttempts > 16 {
		errs = append(errs, fmt.Errorf("migration max_attempts %d: want 0..16", m.MaxAttempts))
	}
	if m.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("migration max_tokens %d: must not be negative", m.MaxTokens))
	}
	return errs
}

// migrationSettings are Migration's environment variables and flags.
var migrationSettings = []setting{
	{"LLMGW_MIGRATION_ENABLED", "migration-enabled", "continue a stream whose replica fails mid-way on another replica (true/false)", func(c *Config, v string) error {
		b, err := parseBool("migration enabled", v)
		c.Migration.Enabled = b
		return err
	}},
	{"LLMGW_MIGRATION_MAX_ATTEMPTS", "migration-max-attempts", "times one stream may move to another replica", integer("migration max attempts", func(c *Config) *int { return &c.Migration.MaxAttempts })},
	{"LLMGW_MIGRATION_MAX_TOKENS", "migration-max-tokens", "most generated tokens a migrated stream may carry", integer("migration max tokens", func(c *Config) *int { return &c.Migration.MaxTokens })},
}

func init() { settings = append(settings, migrationSettings...) }
