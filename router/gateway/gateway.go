package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// Deps are what the gateway routes with.
type Deps struct {
	Replicas  *replicas.Set
	Scheduler *scheduler.Scheduler
	Tracker   *load.Tracker
	Prompts   *prompt.Prompts
	Metrics   *Metrics
	// BlocksOf reports a replica's indexed blocks (GPU, CPU) for the admin API.
	BlocksOf func(model, replica string) (gpu, cpu int)
	// KVGroups explains a hybrid replica's predicted hit group by group
	// for the explain API (router/kvgroups.Index.ExplainGroups): a JSON
	// value, nil for a replica with one full-attention group.
	KVGroups func(model string, keys []uint64, maxBlocks int, replica string) any
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
	// its busy threshold (0: answer 429 at once); MaxQueue bounds waiters,
	// MaxQueuePerTenant one tenant's (0: MaxQueue). See router/admission.
	QueueTimeout      time.Duration
	MaxQueue          int
	MaxQueuePerTenant int
	// ExposeRouteHeaders sends the X-Llmgw-* route headers to clients
	// (off: they reveal cache hits and replica names; see proxy.go).
	ExposeRouteHeaders bool
	// Auth resolves API keys to tenants; nil serves everyone as
	// tenant.Anonymous. Limits enforces tenants' limits; nil enforces none.
	Auth   Authenticator
	Limits *ratelimit.Limiter
	Logger hclog.Logger

	// PD decides when a decode replica prefills a prompt itself instead of
	// pulling it from a prefill replica (the zero value takes
	// disagg.DefaultThreshold); PrefillScheduler schedules the prefill
	// step of a disaggregated model (nil: Scheduler). See pdschedule.go.
	PD               disagg.Threshold
	PrefillScheduler *scheduler.Scheduler
	// Migration continues a stream whose replica fails mid-way on another
	// replica (migration.go); the zero value is off.
	Migration Migration

	// EngineKey is the key to present to a model's engines (vLLM's
	// --api-key), "" for none; nil: none for any model.
	EngineKey func(model string) string
}

// Gateway serves the OpenAI API.
type Gateway struct {
	d      Deps
	engine *gin.Engine
	admin  *gin.Engine
	tr     *transport
	admit  *admission.Queue
	plans  sync.Pool // *plan, reused so that scheduling allocates nothing
	// decisions is the decision log the status page shows.
	decisions decisionLog
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
	if d.PD == (disagg.Threshold{}) {
		d.PD = disagg.DefaultThreshold()
	}
	g := &Gateway{d: d, admit: newAdmission(d)}
	g.tr = &transport{base: d.Transport, health: d.Replicas, load: endNotifier{d.Tracker, g.admit, d.Replicas}, metrics: d.Metrics, engineKey: d.EngineKey}
	proxy := newProxy(g.tr, d.Logger, d.ExposeRouteHeaders)

	e := newEngine(d.Logger)
	e.POST("/v1/chat/completions", g.authenticate, g.routed(openai.Chat, "chat", proxy))
	e.POST("/v1/completions", g.authenticate, g.routed(openai.Completion, "completions", proxy))
	e.GET("/v1/models", g.authenticate, g.models)
	e.GET("/health", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	e.GET("/ready", g.ready)
	g.engine = e
	g.admin = g.newAdmin()
	return g, nil
}

// newEngine is a gin engine answering unknown paths and methods, and
// panics, in OpenAI's error shape.
func newEngine(log hclog.Logger) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.Use(recovery(log))
	e.NoRoute(func(c *gin.Context) {
		openai.WriteError(c.Writer, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", c.Request.Method, c.Request.URL.Path))
	})
	e.NoMethod(func(c *gin.Context) {
		openai.WriteError(c.Writer, http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s", c.Request.Method, c.Request.URL.Path))
	})
	return e
}

// Handler returns the client-facing handler: the OpenAI API, /health and
// /ready, nothing else.
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
		if errors.Is(err, os.ErrDeadlineExceeded) { // router/listener's body_timeout
			c.Header("Connection", "close")
			openai.WriteError(c.Writer, http.StatusRequestTimeout, "could not read the request body: "+err.Error())
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
	grant    *ratelimit.Grant // the tenant's hold on its limits
	limits   ratelimit.Status
	pd       pdPlan // the prefill step of a disaggregated model
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
	p.req, p.prompt, p.decision, p.grant, p.limits = nil, prompt.Result{}, scheduler.Decision{}, nil, ratelimit.Status{}
	p.sreq.Reset(scheduler.Request{})
	clear(p.cands)
	p.pd.reset()
	g.plans.Put(p)
}

// errStatus is an error with the HTTP status the client gets.
type errStatus struct {
	code int
	msg  string
	// typ and oaCode, when set, are OpenAI's error type and code; limit
	// the rate-limit headers of a 429.
	typ, oaCode string
	limit       *ratelimit.Status
	// retryAfter, when positive, is sent as Retry-After (a queue's 429).
	retryAfter time.Duration
}

func (e *errStatus) Error() string { return e.msg }

// decide parses, hashes and schedules one request, ranking at most
// fallbacks replicas after the chosen one (0: all of them); priority is
// the request's admission.HeaderPriority.
func (g *Gateway) decide(ctx context.Context, kind openai.Kind, body []byte, session, priority string, fallbacks int) (*plan, *errStatus) {
	start := time.Now()
	band, err := admission.ParsePriority(priority)
	if err != nil {
		return nil, &errStatus{code: http.StatusBadRequest, msg: err.Error()}
	}
	req, err := openai.Parse(kind, body)
	if err != nil {
		return nil, &errStatus{code: http.StatusBadRequest, msg: err.Error()}
	}
	ten := tenant.FromContext(ctx)
	if es := forTenant(ten, req); es != nil {
		return nil, es
	}
	reps := g.d.Replicas.ForModel(req.Model)
	if len(reps) == 0 {
		return nil, &errStatus{code: http.StatusNotFound, msg: fmt.Sprintf("The model `%s` does not exist.", req.Model)}
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
	res, err := g.d.Prompts.ComputeContext(ctx, req, prompt.Target{Model: base, LoRA: lora, BlockSize: blockSize})
	if err != nil {
		return nil, &errStatus{code: http.StatusBadRequest, msg: err.Error()}
	}
	grant, limits, es := g.limit(ten, req, res.Tokens)
	if es != nil {
		return nil, es
	}
	p := g.getPlan()
	p.req, p.prompt, p.grant, p.limits = req, res, grant, limits
	p.sreq.Reset(scheduler.Request{Model: base, Keys: res.Keys, ApproxKeys: res.ApproxKeys, BlockTokens: blockSize, PromptTokens: res.Tokens, SessionID: session,
		Fallbacks: fallbacks})
	if res.Keys == nil {
		p.sreq.BlockTokens = prompt.TextChunk / 4 // about four bytes per token
	}
	var sched time.Duration
	waitStart := time.Now()
	admitErr := g.admit.Admit(ctx, base, band, func() bool {
		t0 := time.Now()
		p.decision, p.cands, err = g.scheduleRoles(ctx, req.Model, p)
		sched = time.Since(t0)
		return !errors.Is(err, scheduler.ErrAllBusy)
	})
	if err != nil || admitErr != nil {
		grant.Finish(0) // never sent: only the request counts
	}
	switch {
	case admitErr != nil: // every replica busy, and no room or time to wait
		return nil, busy(req.Model, admitErr)
	case errors.Is(err, scheduler.ErrNoReplica):
		return nil, &errStatus{code: http.StatusServiceUnavailable, msg: "no healthy replica serves " + req.Model}
	case err != nil:
		return nil, &errStatus{code: http.StatusInternalServerError, msg: "scheduling failed: " + err.Error()}
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
		session, ok := g.sessionID(c)
		if !ok {
			status = c.Writer.Status()
			return
		}
		p, es := g.decide(c.Request.Context(), kind, body, session, c.GetHeader(admission.HeaderPriority), g.d.Attempts-1+fallbackSpare)
		if es != nil {
			status = es.code
			writeErr(c.Writer, es)
			return
		}
		defer g.putPlan(p) // after the proxy, the last user of p, returns
		rt := &route{body: p.req.Body, attempts: g.attempts(p.decision), promptTokens: p.prompt.Tokens, blockTokens: p.sreq.BlockTokens, served: -1}
		rt.onSend = func(sent scheduler.Ranked) { g.d.Scheduler.Routed(&p.sreq, &sent.Candidate) }
		rt.onServed = func(chosen scheduler.Ranked) {
			g.d.Metrics.Decisions.WithLabelValues(string(chosen.Mode)).Inc()
			g.d.Metrics.CachedTokens.WithLabelValues(string(chosen.Mode)).Observe(float64(chosen.CachedBlocks * p.sreq.BlockTokens))
			g.decisions.record(p.req.Model, &p.decision, chosen, p.prompt.Tokens, p.sreq.BlockTokens, p.total, rt.prefill)
		}
		if len(rt.attempts) == 0 {
			p.grant.Finish(0)
			status = http.StatusServiceUnavailable
			openai.WriteError(c.Writer, status, "no healthy replica serves "+p.req.Model)
			return
		}
		if st, ok := g.prefillStep(c, p, rt); !ok {
			p.grant.Finish(0)
			status = st
			return
		}
		g.planMigration(rt, kind, p, session)
		r := c.Request.WithContext(context.WithValue(c.Request.Context(), routeKey{}, rt))
		r.Body = http.NoBody
		status = g.proxyLimited(c.Writer, r, proxy, p)
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
	ten := tenant.FromContext(c.Request.Context()) // lists only what it may use
	for _, m := range g.d.Replicas.Models() {
		if ten.Allows(m) {
			data = append(data, model{ID: m, Object: "model", OwnedBy: "llmgw"})
		}
	}
	for _, a := range g.d.Replicas.Adapters() {
		if ten.Allows(a.Name) {
			data = append(data, model{ID: a.Name, Object: "model", OwnedBy: "llmgw", Parent: &a.Parent})
		}
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

// endNotifier wakes the head of a model's queue whenever a routed request
// to one of its replicas starts (the load now counts it: the next head can
// see whether room is left) or ends.
type endNotifier struct {
	t   *load.Tracker
	q   *admission.Queue
	set *replicas.Set
}

func (e endNotifier) BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func()) {
	answered, ended := e.t.BeginPrefill(replica, promptTokens, uncachedTokens)
	e.wake(replica)
	return answered, func() {
		ended()
		e.wake(replica)
	}
}

func (e endNotifier) wake(replica string) {
	if e.q.Waiting() == 0 {
		return
	}
	if model, ok := e.set.ModelOf(replica); ok {
		e.q.Wake(model)
	}
}
