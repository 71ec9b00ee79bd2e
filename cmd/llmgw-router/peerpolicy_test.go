package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// TestPeerPolicies: the shipped router's options register the peers'
// policies (router/peerpolicy), so a config naming one starts the router;
// a router started without them refuses the same config, naming the
// plugin type it does not know. The schedulers are those `llmgw bench`
// runs (cmd/llmgw/internal/bench/peers.go), one per peer.
func TestPeerPolicies(t *testing.T) {
	scorer := func(typ string, weight float64, params string) string {
		if params != "" {
			params = "    params = " + params + "\n"
		}
		return fmt.Sprintf("  scorer %q {\n    weight = %g\n%s  }\n", typ, weight, params)
	}
	feed := scorer("prefix", 0.001, `{ speculative_ttl = "0s" }`)
	tests := []struct {
		name, scheduler, unknown string
	}{
		{"dynamo", feed + scorer("dynamo-cost", 1, ""), "dynamo-cost"},
		{"sglang-cache-aware", scorer("sglang-cache-aware", 1, ""), "sglang-cache-aware"},
		{"llmd-default", scorer("approx-prefix", 3, `{ ignore_events = true, ttl = "24h" }`) +
			scorer("llmd-queue", 2, "") + scorer("llmd-kv-utilization", 2, ""), "llmd-queue"},
		{"llmd-precise", feed + scorer("llmd-precise-prefix", 2, "") + scorer("llmd-kv-utilization", 1, "") + scorer("llmd-queue", 1, ""), "llmd-precise-prefix"},
		{"aibrix-prefix", scorer("aibrix-prefix-cache", 1, `{ imbalance_min_gap = 8 }`), "aibrix-prefix-cache"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Listen, cfg.IngestListen, cfg.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
			src := "scheduler {\n  filter \"model\" {}\n  filter \"healthy\" {}\n" + tc.scheduler + "  picker \"max-score\" {}\n}\n"
			if err := cfg.ParseHCL([]byte(src), tc.name+".hcl"); err != nil {
				t.Fatal(err)
			}
			s, err := server.Start(context.Background(), cfg, nil, options()...)
			if err != nil {
				t.Fatalf("with the shipped options: %v", err)
			}
			s.Close()

			s, err = server.Start(context.Background(), cfg, nil)
			if err == nil {
				s.Close()
				t.Fatal("without the peers' plugins: the router started")
			}
			if want := `unknown plugin type "` + tc.unknown + `"`; !strings.Contains(err.Error(), want) {
				t.Errorf("without the peers' plugins: %v; want it to say %s", err, want)
			}
		})
	}
}
