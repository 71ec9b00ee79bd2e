package gateway

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/openai"
)

// poolingRoutes are vLLM's pooling endpoints, every spelling vLLM serves
// (vllm/entrypoints/pooling/*/api_router.py), with the endpoint label
// their requests are counted under: the spellings of one endpoint share
// it.
var poolingRoutes = []struct {
	path     string
	kind     openai.Kind
	endpoint string
}{
	{"/v1/embeddings", openai.Embeddings, "embeddings"},
	{"/pooling", openai.Pooling, "pooling"},
	{"/classify", openai.Classify, "classify"},
	{"/score", openai.Score, "score"},
	{"/v1/score", openai.Score, "score"},
	{"/rerank", openai.Rerank, "rerank"},
	{"/v1/rerank", openai.Rerank, "rerank"},
	{"/v2/rerank", openai.Rerank, "rerank"},
}

// pooling routes the pooling endpoints as the completions endpoints are
// routed (routed): the key and its tenant's model access, the body limit,
// the planner's decision over the replicas serving the endpoint's task
// (keyed by the first input), the tenant's rate limits charged with the
// usage the engine reports (prompt_tokens, total_tokens), admission, and
// retries on another replica before the first byte. The body is forwarded
// as received, to the path the client used.
func (g *Gateway) pooling(e *gin.Engine, proxy http.Handler) {
	for _, r := range poolingRoutes {
		e.POST(r.path, g.authenticate, g.routed(r.kind, r.endpoint, proxy))
	}
}
