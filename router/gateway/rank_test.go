package gateway

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/router/route"
)

// TestSetRank: an attempt whose prediction rests on a rank holding part
// of the prompt is pinned to it; one with no such rank, or with pinning
// off, carries no header, so the engine balances; a client's own header
// never reaches the engine.
func TestSetRank(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pin    bool
		rank   route.RankHit
		client string
		want   string
	}{
		{"hit on rank 3", true, route.RankHit{Rank: 3, Blocks: 5}, "", "3"},
		{"hit on rank 0", true, route.RankHit{Rank: 0, Blocks: 1}, "", "0"},
		{"no rank holds any", true, route.RankHit{}, "", ""},
		{"pinning off", false, route.RankHit{Rank: 2, Blocks: 5}, "", ""},
		{"client header replaced", true, route.RankHit{Rank: 1, Blocks: 2}, "7", "1"},
		{"client header dropped", true, route.RankHit{}, "7", ""},
		{"client header dropped with pinning off", false, route.RankHit{Rank: 1, Blocks: 2}, "7", ""},
	} {
		h := http.Header{}
		if tc.client != "" {
			h.Set("x-data-parallel-rank", tc.client)
		}
		(&transport{pinRanks: tc.pin}).setRank(h, route.Attempt{Rank: tc.rank})
		if got := h.Values(HeaderDataParallelRank); len(got) > 1 || h.Get(HeaderDataParallelRank) != tc.want {
			t.Errorf("%s: header %q; want %q", tc.name, got, tc.want)
		}
	}
}
