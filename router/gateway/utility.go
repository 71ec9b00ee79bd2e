package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
)

// utility serves one of vLLM's utility paths (/tokenize, /detokenize,
// /version) on a replica the planner places it on: the client's body is
// forwarded as it came and the engine's answer passed back as it is,
// with the same keys, limits, retries before the first byte and request
// metrics (labelled endpoint) as the routed paths. withModel: the body
// names the model (or the key's only model is meant); without, any
// replica the key may reach answers.
func (g *Gateway) utility(endpoint string, withModel bool, proxy http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		status := http.StatusOK
		defer func() { g.d.Metrics.Requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc() }()
		status = g.serveUtility(c, withModel, proxy)
	}
}

func (g *Gateway) serveUtility(c *gin.Context, withModel bool, proxy http.Handler) int {
	ctx := c.Request.Context()
	var body []byte
	var p *route.Plan
	var e *route.Error
	if withModel {
		b, ok := g.readBody(c)
		if !ok {
			return c.Writer.Status()
		}
		model, err := openai.ModelOf(b)
		if err != nil {
			openai.WriteError(c.Writer, http.StatusBadRequest, err.Error())
			return http.StatusBadRequest
		}
		body = b
		p, e = g.d.Planner.Place(ctx, model)
	} else {
		p, e = g.d.Planner.PlaceAny(ctx)
	}
	if e != nil {
		writeErr(c.Writer, e)
		return e.Status
	}
	defer g.d.Planner.Release(p)
	if len(p.Attempts) == 0 {
		p.Grant.Finish(0)
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "no healthy replica can answer "+c.Request.URL.Path)
		return http.StatusServiceUnavailable
	}
	r := c.Request.WithContext(context.WithValue(ctx, routeKey{}, newRouting(body, p)))
	r.Body = http.NoBody
	return g.proxyLimited(c.Writer, r, proxy, p)
}
