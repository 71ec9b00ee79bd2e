package config

import (
	"flag"
	"strings"
	"testing"
)

// TestRateSettings: the two caps default to the packages' defaults, come
// from the file, the environment and flags, each later one winning, and a
// negative one is refused by name; 0 lifts a cap.
func TestRateSettings(t *testing.T) {
	t.Parallel()
	if d := Default().Rates; d != (Rates{ScrapeMaxRate: 250, PeerMaxRate: 100}) {
		t.Fatalf("defaults %+v", d)
	}
	c := Default()
	if err := c.ParseHCL([]byte("scrape_max_rate = 500\npeer_load_max_rate = 0\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if c.Rates != (Rates{ScrapeMaxRate: 500, PeerMaxRate: 0}) {
		t.Fatalf("from the file: %+v", c.Rates)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-peer-load-max-rate", "400"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_SCRAPE_MAX_RATE=1000", "LLMGW_PEER_LOAD_MAX_RATE=50"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Rates != (Rates{ScrapeMaxRate: 1000, PeerMaxRate: 400}) {
		t.Errorf("rates %+v; want 1000 from the environment, 400 from the flag", c.Rates)
	}
	if CapOf(0) >= 0 || CapOf(7) != 7 {
		t.Errorf("CapOf(0) = %d, CapOf(7) = %d; want below 0 (no cap) and 7", CapOf(0), CapOf(7))
	}

	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"not a number", []string{"LLMGW_SCRAPE_MAX_RATE=fast"}, `scrape max rate "fast": want an integer`},
		{"negative scrape rate", []string{"LLMGW_SCRAPE_MAX_RATE=-1"}, "scrape_max_rate -1: must not be negative"},
		{"negative peer rate", []string{"LLMGW_PEER_LOAD_MAX_RATE=-5"}, "peer_load_max_rate -5: must not be negative"},
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
