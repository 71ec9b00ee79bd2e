package gateway

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/router/route"
)

// TestSetRank: an attempt the planner pinned (to the rank holding part of
// the prompt, or to the rank it chose for a cold prompt) carries that
// rank; one not pinned, or with pinning off, carries no header, so the
// engine balances; a client's own header never reaches the engine.
func TestSetRank(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pin    bool
		a      route.Attempt
		client string
		want   string
	}{
		{"hit on rank 3", true, route.Attempt{Rank: route.RankHit{Rank: 3, Blocks: 5}, PinRank: 3, Pinned: true}, "", "3"},
		{"hit on rank 0", true, route.Attempt{Rank: route.RankHit{Rank: 0, Blocks: 1}, PinRank: 0, Pinned: true}, "", "0"},
		{"cold prompt on a rank the planner chose", true, route.Attempt{PinRank: 2, Pinned: true}, "", "2"},
		{"not pinned", true, route.Attempt{}, "", ""},
		{"pinning off", false, route.Attempt{Rank: route.RankHit{Rank: 2, Blocks: 5}, PinRank: 2, Pinned: true}, "", ""},
		{"client header replaced", true, route.Attempt{PinRank: 1, Pinned: true}, "7", "1"},
		{"client header dropped", true, route.Attempt{}, "7", ""},
		{"client header dropped with pinning off", false, route.Attempt{PinRank: 1, Pinned: true}, "7", ""},
	} {
		h := http.Header{}
		if tc.client != "" {
			h.Set("x-data-parallel-rank", tc.client)
		}
		(&transport{pinRanks: tc.pin}).setRank(h, tc.a)
		if got := h.Values(HeaderDataParallelRank); len(got) > 1 || h.Get(HeaderDataParallelRank) != tc.want {
			t.Errorf("%s: header %q; want %q", tc.name, got, tc.want)
		}
	}
}
