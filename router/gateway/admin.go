package gateway

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/scheduler"
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

// adminReplica is one replica in the admin listing.
type adminReplica struct {
	ID        string         `json:"id"`
	Model     string         `json:"model"`
	Address   string         `json:"address"`
	Source    string         `json:"source"`
	BlockSize int            `json:"block_size"`
	KVEvents  bool           `json:"kv_events"`
	Mode      scheduler.Mode `json:"mode"`
	Role      string         `json:"role"` // agg, prefill or decode
	// ModeReason says why a replica whose driver sends KV events is in
	// approx mode: its model's index had no room for its state.
	ModeReason string `json:"mode_reason,omitempty"`
	Healthy    bool   `json:"healthy"`
	// Draining: the Consul check warns or the replica is in maintenance
	// (Health says which); it finishes in-flight requests, takes no new ones.
	Draining  bool      `json:"draining"`
	Health    string    `json:"health,omitempty"`
	Adapters  []string  `json:"adapters,omitempty"`
	GPUBlocks int       `json:"gpu_blocks"`
	CPUBlocks int       `json:"cpu_blocks"`
	Load      load.Load `json:"load"`
	// PeerLoad is the part of Load's router-side counts that other routers
	// reported (router/peers).
	PeerLoad load.Peer `json:"peer_load"`
}

func (g *Gateway) adminReplicas(c *gin.Context) {
	out := []adminReplica{}
	for _, r := range g.d.Replicas.All() {
		gpu, cpu := g.d.BlocksOf(r.Model, r.ID)
		out = append(out, adminReplica{
			ID: r.ID, Model: r.Model, Address: r.Address, Source: r.Source, BlockSize: r.BlockSize, KVEvents: r.KVEvents,
			Mode: g.d.Replicas.Mode(r.ID), ModeReason: g.d.Replicas.ModeReason(r.ID), Healthy: g.d.Replicas.Healthy(r.ID), GPUBlocks: gpu, CPUBlocks: cpu,
			Draining: r.Draining, Health: r.Health, Adapters: g.d.Replicas.AdaptersOf(r.ID), Role: r.Role.String(),
			Load: g.d.Tracker.Load(r.ID), PeerLoad: g.d.Tracker.PeerLoad(r.ID),
		})
	}
	c.JSON(http.StatusOK, gin.H{"replicas": out})
}

// explained is one candidate in an explanation.
type explained struct {
	Replica      string             `json:"replica"`
	Mode         scheduler.Mode     `json:"mode"`
	Total        float64            `json:"total"`
	Scores       map[string]float64 `json:"scores"`
	CachedTokens int                `json:"cached_tokens"`
	// KVGroups is each KV-cache group's part of a hybrid replica's hit.
	KVGroups any `json:"kv_groups,omitempty"`
}

// explain schedules a request without sending it or recording it, and
// shows every candidate's scores.
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
		p, es := g.decide(c.Request.Context(), kind, body, session, "", 0) // every candidate, in the key's band
		if es != nil {
			openai.WriteError(c.Writer, es.code, es.msg)
			return
		}
		d := p.decision
		var ranked []explained
		for _, r := range append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...) {
			e := explained{Replica: r.Candidate.ID, Mode: r.Mode, Total: r.Total, Scores: map[string]float64{}, CachedTokens: r.CachedBlocks * p.sreq.BlockTokens}
			for i, name := range d.Scorers {
				e.Scores[name] = r.Scores[i]
			}
			if g.d.KVGroups != nil && p.sreq.Keys != nil {
				e.KVGroups = g.d.KVGroups(p.req.Model, p.sreq.Keys, maxHitBlocks(p.prompt.Tokens, p.sreq.BlockTokens, len(p.sreq.Keys)), r.Candidate.ID)
			}
			ranked = append(ranked, e)
		}
		out := gin.H{
			"model": p.req.Model, "prompt_tokens": p.prompt.Tokens, "blocks": len(p.sreq.Keys) + len(p.sreq.ApproxKeys),
			"exact_keys": p.sreq.Keys != nil, "chosen": ranked[0], "ranked": ranked, "filtered": d.Filtered,
			"overhead_us": p.total.Microseconds(),
		}
		if p.pd.considered {
			out["disaggregated"] = g.explainPD(p)
		}
		c.JSON(http.StatusOK, out)
	}
}
