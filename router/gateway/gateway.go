package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tenant"
)

// Deps are what the gateway serves with. Planner and Metrics are
// required.
type Deps struct {
	// Planner makes every routing decision (router/route); the gateway
	// reaches the scheduler only through it.
	Planner *route.Planner
	Metrics *Metrics
	// Auth resolves API keys to tenants; nil serves everyone as
	// tenant.Anonymous.
	Auth Authenticator
	// Transport reaches replicas (default: a fresh http.Transport with
	// Options.UpstreamTimeout as its response-header timeout).
	Transport http.RoundTripper
	// EngineKey is the key to present to a model's engines (vLLM's
	// --api-key), "" for none; nil: none for any model.
	EngineKey func(model string) string
	// Ready reports whether the replica set is known (Consul synced).
	Ready func() bool
	// Conversations keeps Responses API conversations (nil: a store of
	// this router's own, which no other router reaches).
	Conversations Conversations
	Logger        hclog.Logger
	// Tracer makes each request's server span (router/tracing); nil
	// traces nothing, and adds no traceparent to engine requests.
	Tracer  trace.TracerProvider
	Options Options
}

// Options are the gateway's HTTP settings, each with a default for its
// zero value.
type Options struct {
	SessionHeader   string // default X-Session-Id
	MaxBodyBytes    int64  // default 8 MiB
	UpstreamTimeout time.Duration
	// ExposeRouteHeaders sends the X-Llmgw-* route headers to clients
	// (off: they reveal cache hits and replica names; see proxy.go).
	ExposeRouteHeaders bool
	// Migration continues a stream whose replica fails mid-way on another
	// replica (migration.go); the zero value is off.
	Migration Migration
	// DisableRankPinning stops the X-data-parallel-rank header that sends
	// a request to the data-parallel rank predicted to cache its prefix
	// (rank.go), leaving every rank choice to the engine.
	DisableRankPinning bool
}

// Gateway serves the OpenAI API.
type Gateway struct {
	d      Deps
	engine *gin.Engine
	admin  *gin.Engine
	tr     *transport
	conv   Conversations
	warms  *warmer
}

// New builds the gateway and its routes.
func New(d Deps) (*Gateway, error) {
	if d.Planner == nil || d.Metrics == nil {
		return nil, errors.New("gateway: missing dependency (Planner and Metrics are required)")
	}
	if d.Logger == nil {
		d.Logger = hclog.NewNullLogger()
	}
	o := &d.Options
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = 5 * time.Minute
	}
	if o.SessionHeader == "" {
		o.SessionHeader = "X-Session-Id"
	}
	if d.Ready == nil {
		d.Ready = func() bool { return true }
	}
	if d.Transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = o.UpstreamTimeout
		t.MaxIdleConnsPerHost = 256
		d.Transport = t
	}
	g := &Gateway{d: d, conv: d.Conversations, warms: newWarmer(d.Metrics)}
	if g.conv == nil {
		g.conv = localConversations()
	}
	g.tr = &transport{base: d.Transport, health: d.Planner, load: d.Planner, metrics: d.Metrics, engineKey: d.EngineKey,
		pinRanks: !o.DisableRankPinning}
	proxy := newProxy(g.tr, d.Logger, o.ExposeRouteHeaders)

	e := newEngine(d.Logger)
	if d.Tracer != nil {
		e.Use(serverSpans(d.Tracer))
	}
	e.POST("/v1/chat/completions", g.authenticate, g.routed(openai.Chat, "chat", proxy))
	e.POST("/v1/completions", g.authenticate, g.routed(openai.Completion, "completions", proxy))
	g.pooling(e, proxy)
	e.GET("/v1/models", g.authenticate, g.models)
	e.POST("/tokenize", g.authenticate, g.utility("tokenize", true, proxy))
	e.POST("/detokenize", g.authenticate, g.utility("detokenize", true, proxy))
	e.GET("/version", g.authenticate, g.utility("version", false, proxy))
	g.responseRoutes(e, proxy)
	g.messageRoutes(e, proxy)
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

// Handler returns the client-facing handler: the OpenAI API, vLLM's
// /tokenize, /detokenize and /version, /health and /ready, nothing else.
func (g *Gateway) Handler() http.Handler { return g.engine }

// Close stops the prefix copies in flight (warm.go) and waits for them,
// then drops idle connections to replicas; call it after the API server
// has shut down.
func (g *Gateway) Close() {
	g.warms.close()
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
			if d, ok := c.Writer.(*dialectWriter); ok {
				d.finish() // the API's error shape for this 500 too
			}
			c.Abort()
		}()
		c.Next()
	}
}

// readBody reads the request body within the size limit, answering the
// client itself when it cannot.
func (g *Gateway) readBody(c *gin.Context) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, g.d.Options.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			openai.WriteError(c.Writer, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than the limit of %d bytes", g.d.Options.MaxBodyBytes))
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

// routed handles a completions endpoint: plan, then proxy.
func (g *Gateway) routed(kind openai.Kind, endpoint string, proxy http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) {
		status := http.StatusOK // a stream the proxy aborts mid-way counts as sent
		defer func() { g.d.Metrics.Requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc() }()
		status = g.serveRouted(c, kind, proxy)
	}
}

// serveRouted answers one routed request and returns the status the
// client got.
func (g *Gateway) serveRouted(c *gin.Context, kind openai.Kind, proxy http.Handler) int {
	body, ok := g.readBody(c)
	if !ok {
		return c.Writer.Status()
	}
	return g.servePlanned(c, route.Input{Kind: kind, Body: body}, proxy, nil)
}

// servePlanned plans in (its session and priority taken from c's
// headers) and proxies it. events, when set, shapes the error event
// that ends a stream whose replica fails mid-way, for an API whose
// streams are not OpenAI's chat chunks; such streams are not migrated.
func (g *Gateway) servePlanned(c *gin.Context, in route.Input, proxy http.Handler, events func(string) []byte) int {
	session, ok := g.sessionID(c)
	if !ok {
		return c.Writer.Status()
	}
	in.Session, in.Priority = session, c.GetHeader(admission.HeaderPriority)
	in.RequestID = c.GetHeader(disagg.HeaderRequestID)
	p, e := g.d.Planner.Plan(c.Request.Context(), in)
	if e != nil {
		writeErr(c.Writer, e)
		return e.Status
	}
	defer g.d.Planner.Release(p) // after the proxy, the last user of p, returns
	if len(p.Attempts) == 0 {
		p.Grant.Finish(0)
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "no healthy replica serves "+p.Request.Model)
		return http.StatusServiceUnavailable
	}
	rt := newRouting(p.Request.Wire(), p)
	if st, ok := g.prefillStep(c, p, rt); !ok {
		p.Grant.Finish(0)
		return st
	}
	if events != nil {
		log := g.d.Logger
		rt.wrap = func(resp *http.Response, replica string) io.ReadCloser {
			return &sseGuard{ReadCloser: resp.Body, ctx: resp.Request.Context(), replica: replica, log: log, event: events}
		}
	} else {
		g.planMigration(rt, in.Kind, p, session)
	}
	g.warm(p)
	r := c.Request.WithContext(context.WithValue(c.Request.Context(), routeKey{}, rt))
	r.Body = http.NoBody
	return g.proxyLimited(c.Writer, r, proxy, p)
}

// models lists the served models as vLLM does: base models with a null
// parent, then each LoRA adapter some replica serves with its base model as
// parent; only what the key's tenant may use. root and max_model_len are
// vLLM's where the replicas advertise them, left out where unknown.
func (g *Gateway) models(c *gin.Context) {
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root,omitempty"`
		Parent      *string `json:"parent"`
		MaxModelLen int     `json:"max_model_len,omitempty"`
	}
	data := []model{}
	for _, m := range g.d.Planner.Models(tenant.FromContext(c.Request.Context())) {
		e := model{ID: m.ID, Object: "model", OwnedBy: "llmgw", Root: m.Root, MaxModelLen: m.MaxModelLen}
		if m.Parent != "" {
			e.Parent = &m.Parent
		}
		data = append(data, e)
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

// ready answers the load balancer's readiness probe: 200 once the
// replica set is known and holds a replica. It needs no key, so it names
// no model: which models exist is what /v1/models shows a key, and the
// admin port's /admin/replicas shows an operator.
func (g *Gateway) ready(c *gin.Context) {
	switch {
	case !g.d.Ready():
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "the replica set is not known yet")
	case len(g.d.Planner.ModelNames()) == 0:
		openai.WriteError(c.Writer, http.StatusServiceUnavailable, "no replicas")
	default:
		c.JSON(http.StatusOK, gin.H{"status": "ready"})
	}
}
