package gateway

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
)

// newAdmin routes the operators' API, served apart from the client port
// (router/server's admin listener): /metrics, /admin/replicas and the
// explain API. They name replicas, their load and what each caches, which
// is no tenant's business.
func (g *Gateway) newAdmin() *gin.Engine {
	e := newEngine(g.d.Logger)
	e.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/metrics", gin.WrapH(promhttp.HandlerFor(g.d.Metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/admin/replicas", g.adminReplicas)
	e.POST("/admin/explain/chat", g.explain(openai.Chat))
	e.POST("/admin/explain/completions", g.explain(openai.Completion))
	return e
}

// AdminHandler returns the admin handler: /metrics, /admin/replicas,
// /admin/explain/* and /health. Serve it on a listener tenants cannot
// reach, or behind a token.
func (g *Gateway) AdminHandler() http.Handler { return g.admin }

func (g *Gateway) adminReplicas(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"replicas": g.d.Planner.Replicas()})
}

// explain plans a request without sending it or recording it, and shows
// every candidate's scores (route.Planner.Explain).
func (g *Gateway) explain(kind openai.Kind) gin.HandlerFunc {
	return func(c *gin.Context) {
		body, ok := g.readBody(c)
		if !ok {
			return
		}
		session, ok := g.sessionID(c)
		if !ok {
			return
		}
		out, e := g.d.Planner.Explain(c.Request.Context(), route.Input{Kind: kind, Body: body, Session: session})
		if e != nil {
			openai.WriteError(c.Writer, e.Status, e.Message)
			return
		}
		c.JSON(http.StatusOK, out)
	}
}
