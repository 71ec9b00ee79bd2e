package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
)

// Response headers that explain a routing decision. They are sent only
// with Options.ExposeRouteHeaders: X-Llmgw-Cached-Tokens tells a client how
// much of its prompt some earlier request (anyone's) left cached, which is
// a way to learn what others sent, and the replica and mode headers give
// the same away less directly, with the fleet's layout.
const (
	HeaderReplica      = "X-Llmgw-Replica"
	HeaderMode         = "X-Llmgw-Routing-Mode"
	HeaderCachedTokens = "X-Llmgw-Cached-Tokens"
	HeaderAttempts     = "X-Llmgw-Attempts"
	// HeaderPrefillReplica names the prefill replica of a disaggregated
	// request.
	HeaderPrefillReplica = "X-Llmgw-Prefill-Replica"
)

// observer is what a routing's plan learns from the proxy
// (route.Plan): Sent as a request goes to an attempt's replica, before it
// answers, so that what the scheduler's observers learn from it reaches
// the decisions of requests that arrive while this one is prefilled, such
// as the siblings of a fan-out burst; Served once a replica answers,
// before any byte reaches the client, so the decision is counted and
// logged for the replica that took it.
type observer interface {
	Sent(route.Attempt)
	Served(route.Attempt)
}

// routing is the per-request state the proxy's hooks share, carried in
// the request context.
type routing struct {
	body         []byte
	attempts     []route.Attempt
	promptTokens int
	plan         observer
	// remotePrefill: a prefill replica computed the prompt (prefill, the
	// step it took, pdstep.go); the decode replica has none to compute.
	remotePrefill bool
	// wrap, when set, takes over a streamed answer's body from sseGuard
	// (mid-stream migration, migration.go).
	wrap func(resp *http.Response, replica string) io.ReadCloser

	// Set by the transport: the attempt that answered, and how many were tried.
	mu     sync.Mutex
	served int // index into attempts; -1 while none
	tried  int
}

// newRouting is the routing of body over p's attempts.
func newRouting(body []byte, p *route.Plan) *routing {
	return &routing{body: body, attempts: p.Attempts, promptTokens: p.PromptTokens, plan: p, served: -1}
}

type routeKey struct{}

func routeOf(ctx context.Context) *routing {
	r, _ := ctx.Value(routeKey{}).(*routing)
	return r
}

// Health is what the proxy reports attempt outcomes to (route.Planner,
// over the replica set's circuit breakers).
type Health interface {
	Failed(replica string)
	Succeeded(replica string)
}

// LoadTracker counts requests in flight per replica, and their uncached
// prompt tokens until the replica answers (route.Planner, over
// load.Tracker, waking the admission queue).
type LoadTracker interface {
	BeginPrefill(replica string, promptTokens, uncachedTokens int) (answered, end func())
}

// retryStatus reports whether a replica's answer should be retried on the
// next replica when no byte has reached the client yet.
func retryStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests
}

// transport tries a request's replicas in order until one answers with
// something other than a connect failure or a retryable status.
type transport struct {
	base    http.RoundTripper
	health  Health
	load    LoadTracker
	metrics *Metrics

	engineKey func(model string) string // nil: no keys
	// pinRanks sends each attempt's predicted data-parallel rank (rank.go).
	pinRanks bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt := routeOf(req.Context())
	if rt == nil || len(rt.attempts) == 0 {
		return nil, errors.New("proxy: request carries no route")
	}
	var lastErr error
	for i, a := range rt.attempts {
		out := t.attemptRequest(req, rt, a)
		span := startEngineSpan(req.Context(), SpanUpstream, a, i, out.Header)
		id := a.Replica
		uncached := rt.promptTokens - a.CachedTokens
		if rt.remotePrefill {
			uncached = 0
		}
		answered, end := t.load.BeginPrefill(id, rt.promptTokens, uncached)
		rt.mu.Lock()
		rt.tried = i + 1
		rt.mu.Unlock()
		rt.plan.Sent(a)
		resp, err := t.base.RoundTrip(out)
		last := i == len(rt.attempts)-1
		switch {
		case err != nil:
			end()
			endEngineSpan(span, 0, err)
			if req.Context().Err() != nil {
				t.metrics.Attempts.WithLabelValues("canceled").Inc()
				return nil, err
			}
			t.metrics.Attempts.WithLabelValues("connect_error").Inc()
			t.health.Failed(id)
			lastErr = fmt.Errorf("replica %s (%s): %w", id, a.Address, err)
			continue
		case resp.StatusCode == http.StatusUnauthorized:
			// The engine refused the router's key: the client's request
			// was never the problem, so its 401 must not reach the client.
			t.metrics.Attempts.WithLabelValues("engine_unauthorized").Inc()
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			end()
			lastErr = engineRefused(id, a.Model, out.Header)
			endEngineSpan(span, resp.StatusCode, lastErr)
			continue
		case retryStatus(resp.StatusCode) && !last:
			t.metrics.Attempts.WithLabelValues("retry_status").Inc()
			if resp.StatusCode != http.StatusTooManyRequests {
				t.health.Failed(id)
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			end()
			lastErr = fmt.Errorf("replica %s answered %s", id, resp.Status)
			endEngineSpan(span, resp.StatusCode, lastErr)
			continue
		}
		t.metrics.Attempts.WithLabelValues("ok").Inc()
		if resp.StatusCode < 500 {
			t.health.Succeeded(id)
		}
		rt.mu.Lock()
		rt.served = i
		rt.mu.Unlock()
		rt.plan.Served(a)
		resp.Body = &endOnClose{ReadCloser: resp.Body, end: end, answered: answered, span: span, status: resp.StatusCode}
		return resp, nil
	}
	return nil, lastErr
}

// attemptRequest is req as sent to attempt a's replica: its address,
// the routed body, the engine's key and the predicted data-parallel rank.
func (t *transport) attemptRequest(req *http.Request, rt *routing, a route.Attempt) *http.Request {
	out := req.Clone(req.Context())
	out.URL.Host = a.Address
	out.Host = a.Address
	out.Body = io.NopCloser(bytes.NewReader(rt.body))
	out.ContentLength = int64(len(rt.body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rt.body)), nil }
	setEngineAuth(out.Header, t.keyFor(a.Model))
	t.setRank(out.Header, a)
	return out
}

// endOnClose ends the in-flight count when the proxy closes the body, and
// tells the tracker the replica answered at its first byte (its prompt is
// prefilled by then).
type endOnClose struct {
	io.ReadCloser
	end, answered func()
	// span is the attempt's SpanUpstream, ended with the answer's body:
	// its length is the engine's whole answer, a stream's last token too.
	span   trace.Span
	status int
}

func (e *endOnClose) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if n > 0 && e.answered != nil {
		e.answered()
		e.answered = nil
	}
	return n, err
}

func (e *endOnClose) Close() error {
	e.end()
	endEngineSpan(e.span, e.status, nil)
	return e.ReadCloser.Close()
}

// newProxy builds the reverse proxy: Rewrite points at the first attempt
// (the transport moves on to the others), ModifyResponse names the replica
// that answered, ErrorHandler answers OpenAI-shaped JSON.
func newProxy(tr *transport, log hclog.Logger, expose bool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rt := routeOf(pr.In.Context())
			pr.Out.URL.Scheme = "http"
			if rt != nil && len(rt.attempts) > 0 {
				pr.Out.URL.Host = rt.attempts[0].Address
			}
			pr.SetXForwarded()
			pr.Out.Header.Del("Authorization") // the tenant's API key never reaches an engine
			pr.Out.Header.Del(HeaderAPIKey)
		},
		Transport:     tr,
		FlushInterval: -1, // every write goes to the client at once (SSE)
		ModifyResponse: func(resp *http.Response) error {
			rt := routeOf(resp.Request.Context())
			if rt == nil {
				return nil
			}
			rt.mu.Lock()
			a, tried := rt.attempts[rt.served], rt.tried
			rt.mu.Unlock()
			h := resp.Header
			if expose {
				h.Set(HeaderReplica, a.Replica)
				h.Set(HeaderMode, string(a.Mode))
				h.Set(HeaderCachedTokens, strconv.Itoa(a.CachedTokens))
				h.Set(HeaderAttempts, strconv.Itoa(tried))
			}
			switch {
			case !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream"):
			case rt.wrap != nil:
				resp.Body = rt.wrap(resp, a.Replica)
			default:
				resp.Body = &sseGuard{ReadCloser: resp.Body, ctx: resp.Request.Context(), replica: a.Replica, log: log}
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left; nobody to answer
			}
			log.Warn("no replica answered", "path", r.URL.Path, "error", err)
			openai.WriteError(w, http.StatusBadGateway, "no replica answered: "+err.Error())
		},
	}
}

// sseGuard ends a stream whose replica failed mid-way with an OpenAI error
// event, so clients see a clear error instead of a silent truncation.
type sseGuard struct {
	io.ReadCloser
	ctx     context.Context
	replica string
	log     hclog.Logger
	tail    []byte
	done    bool
	// note is added to the error event's message; onFail, when set, is
	// called when it is sent.
	note   string
	onFail func()
	// event, when set, renders the error event in the stream's own API
	// (Responses, Messages); else it is a chat chunk error then [DONE].
	event func(msg string) []byte
}

func (s *sseGuard) Read(p []byte) (int, error) {
	if len(s.tail) > 0 {
		n := copy(p, s.tail)
		s.tail = s.tail[n:]
		return n, nil
	}
	if s.done {
		return 0, io.EOF
	}
	n, err := s.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
		s.log.Warn("replica failed mid-stream", "replica", s.replica, "error", err)
		msg := fmt.Sprintf("replica %s failed mid-stream: %v%s", s.replica, err, s.note)
		if s.onFail != nil {
			s.onFail()
		}
		if s.event != nil {
			s.tail = append([]byte("\n\n"), s.event(msg)...)
		} else {
			s.tail = append(append([]byte("\n\ndata: "), openai.ErrorBody(http.StatusBadGateway, msg)...), "\n\ndata: [DONE]\n\n"...)
		}
		s.done = true
		return n, nil
	}
	return n, err
}
