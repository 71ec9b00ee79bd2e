package gateway

import (
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/router/route"
)

// HeaderDataParallelRank is vLLM's header naming the data-parallel rank
// that serves a request (OpenAIServing._get_data_parallel_rank). Without
// it a DP > 1 engine picks the rank by load, so a prefix the router
// predicted on one rank is found there only by chance.
const HeaderDataParallelRank = "X-data-parallel-rank"

// setRank pins a's request to the rank the planner chose (a.PinRank):
// the rank its prediction rests on when some rank holds part of the
// prompt, else, on a replica that declares its data-parallel size, the
// rank the planner's rotation gave the cold prompt, which its speculative
// credit names so that siblings follow. Unpinned (a replica of unknown
// size, or pinning off) it sends no header and the engine balances. A
// client's own header is dropped either way: it names a rank of a replica
// the client did not choose.
func (t *transport) setRank(h http.Header, a route.Attempt) {
	h.Del(HeaderDataParallelRank)
	if t.pinRanks && a.Pinned {
		h.Set(HeaderDataParallelRank, strconv.Itoa(a.PinRank))
	}
}
