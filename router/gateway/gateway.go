package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Deps are what the gateway routes with.
type Deps struct {
	Replicas  *replicas.Set
	Scheduler *scheduler.Scheduler
	Tracker   *scheduler.Tracker
	Prompts   *prompt.Prompts
	Metrics   *Metrics
	// BlocksOf reports a replica's indexed blocks (GPU, CPU) for the admin API.
	BlocksOf func(model, replica string) (gpu, cpu int)
	// Ready reports whether the replica set is known (Consul synced).
	Ready func() bool
	// Transport reaches replicas (default: a fresh http.Transport with
	// UpstreamTimeout as its response-header timeout).
	Transport       http.RoundTripper
	SessionHeader   string
	MaxBodyBytes    int64
	Attempts        int
	UpstreamTimeout time.Duration
	// QueueTimeout is how long a request waits while every replica is over
	// its busy threshold (0: answer 429 at once); MaxQueue bounds waiters.
	QueueTimeout time.Duration
	MaxQueue     int
	Logger       hclog.Logger

	// EngineKey is the key to present to a model's engines (vLLM's
	// --api-key), "" for none; nil: none for any model.
	EngineKey func(model string) string
}

// Gateway serves the OpenAI API.
type Gateway struct {
	d      Deps
	engine *gin.Engine
	tr     *transport
	queue  *queue
	plans  sync.Pool // *plan, reused so that scheduling allocates nothing
}

// New builds the gateway and its routes.
func New(d Deps) (*Gateway, error) {
	if d.Replicas == nil || d.Scheduler == nil || d.Tracker == nil || d.Prompts == nil || d.Metrics == nil {
		return nil, errors.New("gateway: missing dependency")
	}
	if d.Logger == nil {
		d.Logger = hclog.NewNullLogger()
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 8 << 20
	}
	d.Attempts = max(d.Attempts, 1)
	if d.UpstreamTimeout <= 0 {
		d.UpstreamTimeout = 5 * time.Minute
	}
	if d.SessionHeader == "" {
		d.SessionHeader = "X-Session-Id"
	}
	if d.Ready == nil {
		d.Ready = func() bool { return true }
	}
	if d.BlocksOf == nil {
		d.BlocksOf = func(string, string) (int, int) { return 0, 0 }
	}
	if d.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = d.UpstreamTimeout
		t.MaxIdleConnsPerHost = 256
		d.Transport = t
	}
	if d.MaxQueue <= 0 {
		d.MaxQueue = 1024
	}
	g := &Gateway{d: d, queue: newQueue(d.QueueTimeout, d.MaxQueue)}
	g.tr = &transport{base: d.Transport, health: d.Replicas, load: endNotifier{d.Tracker, g.queue}, metrics: d.Metrics, engineKey: d.EngineKey}
	proxy := newProxy(g.tr, d.Logger)

	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.Use(recovery(d.Logger))
	e.NoRoute(func(c *gin.Context) {
		openai.WriteError(c.Writer, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		openai.WriteError(c.Writer, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})
	e.POST("/v1/chat/completions", g.routed(openai.Chat, "chat", proxy))
	e.POST("/v1/completions", g.routed(openai.Completion, "completions", proxy))
	e.GET("/v1/models", g.models)
	e.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/ready", g.ready)
	e.GET("/metrics", gin.WrapH(promhttp.HandlerFor(d.Metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/admin/replicas", g.adminReplicas)
	e.POST("/admin/explain/chat", g.explain(openai.Chat))
	e.POST("/admin/explain/completions", g.explain(openai.Completion))
	g.engine = e
	return g, nil
}

// Handler returns the HTTP handler.
func (g *Gateway) Handler() http.Handler { return g.engine }

// Close drops idle connections to replicas; call it after the API server
// has shut down.
func (g *Gateway) Close() {
	if t, ok := g.d.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// recovery answers a panicking handler with a 500 in OpenAI's shape, but
// lets http.ErrAbortHandler through: the proxy uses it to cut a response
// whose replica failed after the status line was sent.
func recovery(log hclog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler { //nolint:errorlint // a sentinel value, compared as net/http does
				panic(r)
			}
			log.Error("handler panic", "path", c.Request.URL.Path, "panic", r)
			if !c.Writer.Written() {
				openai.WriteError(c.Writer, http.StatusInternalServerError, "internal error")
			}
			c.Abort()
		}()
		c.Next()
	}
}

// readBody reads the request body within the size limit, answering the
// client itself when it cannot.
func (g *Gateway) readBody(c *gin.Context) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, g.d.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			openai.WriteError(c.Writer, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than the limit of %d bytes", g.d.MaxBodyBytes))
			return nil, false
		}
		openai.WriteError(c.Writer, http.StatusBadRequest, "could not read the request body: "+err.Error())
		return nil, false
	}
	return body, true
}

// plan is a routing decision ready to proxy.
type plan struct {
	req      *openai.Request
	sreq     scheduler.Request // its scratch memory is kept across reuses
	cands    []scheduler.Candidate
	decision scheduler.Decision
	prompt   prompt.Result
	total    time.Duration
}

func (g *Gateway) getPlan() *plan {
	if p, ok := g.plans.Get().(*plan); ok {
		return p
	}
	return &plan{}
}

// putPlan returns p for reuse once nothing refers to it or to its decision
// (the proxy has returned), dropping what it holds of the request.
func (g *Gateway) putPlan(p *plan) {
	p.req, p.prompt, p.decision = nil, prompt.Result{}, scheduler.Decision{}
	p.sreq.Reset(scheduler.Request{})
	clear(p.cands)
	g.plans.Put(p)
}

// errStatus is an error with the HTTP status the client gets.
type errStatus struct {
	code int
	msg  string
}

func (e *errStatus) Error() string { return e.msg }

// decide parses, hashes and schedules one request, ranking at most
// fallbacks replicas after the chosen one (0: all of them).
func (g *Gateway) decide(ctx context.Context, kind openai.Kind, body []byte, session string, fallbacks int) (*plan, *errStatus) {
	start := time.Now()
	req, err := openai.Parse(kind, body)
	if err != nil {
		return nil, &errStatus{http.StatusBadRequest, err.Error()}
	}
	reps := g.d.Replicas.ForModel(req.Model)
	if len(reps) == 0 {
		return nil, &errStatus{http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", req.Model)}
	}
	// A LoRA adapter is served by replicas of its base model: schedule and
	// look up by the base model, key the prompt from the adapter's root.
	base, lora := reps[0].Model, ""
	if base != req.Model {
		lora = req.Model
	}
	blockSize := reps[0].BlockSize
	for _, r := range reps[1:] {
		if r.BlockSize != blockSize {
			g.d.Logger.Warn("replicas of one model differ in block size; hashing with the first", "model", req.Model, "replica", r.ID, "block_size", r.BlockSize, "used", blockSize)
			break
		}
	}
	res, err := g.d.Prompts.ComputeFor(req, prompt.Target{Model: base, LoRA: lora, BlockSize: blockSize})
	if err != nil {
		return nil, &errStatus{http.StatusBadRequest, err.Error()}
	}
	p := g.getPlan()
	p.req, p.prompt = req, res
	p.sreq.Reset(scheduler.Request{Model: base, Keys: res.Keys, ApproxKeys: res.ApproxKeys, BlockTokens: blockSize, PromptTokens: res.Tokens, SessionID: session,
		Fallbacks: fallbacks})
	if res.Keys == nil {
		p.sreq.BlockTokens = prompt.TextChunk / 4 // about four bytes per token
	}
	var sched time.Duration
	waitStart := time.Now()
	g.queue.wait(ctx, func() bool {
		t0 := time.Now()
		p.cands = g.d.Replicas.AppendCandidates(p.cands[:0], req.Model)
		p.decision, err = g.d.Scheduler.Schedule(ctx, &p.sreq, p.cands)
		sched = time.Since(t0)
		return !errors.Is(err, scheduler.ErrAllBusy)
	})
	switch {
	case errors.Is(err, scheduler.ErrAllBusy):
		return nil, &errStatus{http.StatusTooManyRequests, "every replica of " + req.Model + " is over its load threshold; retry later"}
	case errors.Is(err, scheduler.ErrNoReplica):
		return nil, &errStatus{http.StatusServiceUnavailable, "no healthy replica serves " + req.Model}
	case err != nil:
		return nil, &errStatus{http.StatusInternalServerError, "scheduling failed: " + err.Error()}
	}
	queued := time.Since(waitStart) - sched // time spent waiting, not routing
	p.total = time.Since(start) - queued
	o := g.d.Metrics.Overhead
	o.WithLabelValues("render").Observe(res.Render.Seconds())
	o.WithLabelValues("tokenize").Observe(res.Tokenize.Seconds())
	o.WithLabelValues("hash").Observe(res.Hash.Seconds())
	o.WithLabelValues("schedule").Observe(sched.Seconds())
	o.WithLabelValues("total").Observe(p.total.Seconds())
	return p, nil
}

// fallbackSpare is how many fallbacks a decision ranks beyond the
// attempts: attempts skips replicas that left the set since the decision.
const fallbackSpare = 2

func (g *Gateway) attempts(d scheduler.Decision) []attempt {
	ranked := append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...)
	out := make([]attempt, 0, min(len(ranked), g.d.Attempts))
	for _, r := range ranked {
		if len(out) == g.d.Attempts {
			break
		}
		rep, ok := g.d.Replicas.Get(r.Candidate.ID)
		if !ok {
			continue // left the set since the decision
		}
		out = append(out, attempt{ranked: r, address: rep.Address})
	}
	return out
}

// routed handles a completions endpoint: decide, then proxy.
func (g *Gateway) routed(kind openai.Kind, endpoint string, proxy http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		status := http.StatusOK
		defer func() { g.d.Metrics.Requests.WithLabelValues(endpoint, fmt.Sprint(status)).Inc() }()
		body, ok := g.readBody(c)
		if !ok {
			status = c.Writer.Status()
			return
		}
		p, es := g.decide(c.Request.Context(), kind, body, c.GetHeader(g.d.SessionHeader), g.d.Attempts-1+fallbackSpare)
		if es != nil {
			status = es.code
			openai.WriteError(c.Writer, es.code, es.msg)
			return
		}
		defer g.putPlan(p) // after the proxy, the last user of p, returns
		rt := &route{body: body, attempts: g.attempts(p.decision), promptTokens: p.prompt.Tokens, blockTokens: p.sreq.BlockTokens, served: -1}
		rt.onServed = func(chosen scheduler.Ranked) {
			g.d.Scheduler.Routed(&p.sreq, &chosen.Candidate)
			g.d.Metrics.Decisions.WithLabelValues(string(chosen.Mode)).Inc()
			g.d.Metrics.CachedTokens.WithLabelValues(string(chosen.Mode)).Observe(float64(chosen.CachedBlocks * p.sreq.BlockTokens))
		}
		if len(rt.attempts) == 0 {
			status = http.StatusServiceUnavailable
			openai.WriteError(c.Writer, status, "no healthy replica serves "+p.req.Model)
			return
		}
		r := c.Request.WithContext(context.WithValue(c.Request.Context(), routeKey{}, rt))
		r.Body = http.NoBody
		proxy.ServeHTTP(c.Writer, r)
		status = c.Writer.Status()
	}
}

// models lists the served models as vLLM does: base models with a null
// parent, then each LoRA adapter some replica serves with its base model as
// parent.
func (g *Gateway) models(c *gin.Context) {
	type model struct {
		ID      string  `json:"id"`
		Object  string  `json:"object"`
		Created int64   `json:"created"`
		OwnedBy string  `json:"owned_by"`
		Parent  *string `json:"parent"`
	}
	data := []model{}
	for _, m := range g.d.Replicas.Models() {
		data = append(data, model{ID: m, Object: "model", OwnedBy: "llmgw"})
	}
	for _, a := range g.d.Replicas.Adapters() {
		data = append(data, model{ID: a.Name, Object: "model", OwnedBy: "llmgw", Parent: &a.Parent})
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

func (g *Gateway) ready(c *gin.Context) {
	switch {
	case !g.d.Ready():
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "the replica set is not known yet")
	case len(g.d.Replicas.Models()) == 0:
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "no replicas")
	default:
		c.JSON(http.StatusOK, gin.H{"status": "ready", "models": g.d.Replicas.Models()})
	}
}

// endNotifier wakes queued requests whenever a routed request ends.
type endNotifier struct {
	t *scheduler.Tracker
	q *queue
}

func (e endNotifier) BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func()) {
	answered, ended := e.t.BeginPrefill(replica, promptTokens, uncachedTokens)
	return answered, func() {
		ended()
		e.q.wake()
	}
}
