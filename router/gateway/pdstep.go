package gateway

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/route"
)

// prefillStep runs the first step of a disaggregated request (p.pd.remote)
// and points rt at the second: the decode replicas, the decode body
// carrying the prefill replica's kv_transfer_params, one X-Request-Id for
// both. The prefill request is tried on the chosen prefill replica and
// its fallbacks, with the proxy's rules (breakers, the engine key, retry
// on connect failures and retryable statuses). When every prefill
// attempt fails the request is served as it would be without prefill
// replicas: rt is left pointing at the decode step's decision with the
// client's body, and the decode replica prefills the prompt itself. The
// client waits a little longer instead of getting an error, which a
// replica that can serve it would not deserve.
//
// A prefill replica that refuses the request itself (a 4xx other than 401
// and 429: a prompt too long, a bad parameter) answers the client: the
// decode replica would refuse it alike. prefillStep then returns false
// with the status it sent.
func (g *Gateway) prefillStep(c *gin.Context, p *route.Plan, rt *routing) (int, bool) {
	prefill, remote := p.PrefillAttempts()
	if !remote {
		p.NoPrefillStep()
		return 0, true
	}
	body, err := disagg.PrefillBody(p.Request.Body)
	if err != nil { // openai.Parse took it as an object: only a bug gets here
		g.d.Logger.Error("cannot build the prefill request", "error", err)
		p.PrefillFailed()
		return 0, true
	}
	id := requestID()
	ctx := c.Request.Context()
	var lastErr error
	for i, a := range prefill {
		params, refused, err := g.prefillOnce(c, p, a, i, id, body)
		if refused != nil {
			g.answerWith(c.Writer, refused)
			return refused.status, false
		}
		if err == nil {
			err = g.toDecode(c, p, rt, a, id, params)
		}
		if err == nil {
			return 0, true
		}
		if ctx.Err() != nil {
			return 0, true // the proxy finds the client gone
		}
		lastErr = err
	}
	g.d.Logger.Warn("every prefill replica failed; the decode replica prefills the prompt itself", "model", p.Request.Model, "error", lastErr)
	p.PrefillFailed()
	return 0, true
}

// toDecode points rt at the decode step once replica a has prefilled the
// prompt: the decode replicas among the decode step's attempts
// (route.Plan.Prefilled), the client's body with the prefill answer's
// kv_transfer_params, the request id of the prefill step.
func (g *Gateway) toDecode(c *gin.Context, p *route.Plan, rt *routing, a route.Attempt, id string, params disagg.Params) error {
	decodeBody, err := disagg.DecodeBody(p.Request.Body, params)
	if err != nil {
		return fmt.Errorf("decode request: %w", err)
	}
	decode, err := p.Prefilled(a)
	if err != nil {
		return err
	}
	rt.body, rt.attempts, rt.remotePrefill = decodeBody, decode, true
	c.Request.Header.Set(disagg.HeaderRequestID, id)
	if g.d.Options.ExposeRouteHeaders {
		c.Writer.Header().Set(HeaderPrefillReplica, a.Replica)
	}
	return nil
}

// refusal is a prefill replica's answer that the client gets as it is.
type refusal struct {
	status int
	ctype  string
	body   []byte
}

// prefillOnce sends the prefill request to one replica: the parameters a
// decode replica needs, or a refusal for the client, or an error that
// says why the next prefill replica should be tried. The request is one
// SpanPrefill, a child of the request's server span, whose trace context
// the prefill replica is sent.
func (g *Gateway) prefillOnce(c *gin.Context, p *route.Plan, a route.Attempt, i int, id string, body []byte) (disagg.Params, *refusal, error) {
	rid := a.Replica
	req, err := http.NewRequestWithContext(c.Request.Context(), http.MethodPost, "http://"+a.Address+c.Request.URL.Path, bytes.NewReader(body))
	if err != nil {
		return disagg.Params{}, nil, fmt.Errorf("prefill replica %s: %w", rid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(disagg.HeaderRequestID, id)
	span := startEngineSpan(req.Context(), SpanPrefill, a, i, req.Header)
	params, refused, status, err := g.sendPrefill(c, p, a, req)
	endEngineSpan(span, status, err)
	return params, refused, err
}

// sendPrefill is prefillOnce's exchange with the replica, req built; it
// also returns the replica's status (0: none came).
func (g *Gateway) sendPrefill(c *gin.Context, p *route.Plan, a route.Attempt, req *http.Request) (disagg.Params, *refusal, int, error) {
	rid, model := a.Replica, a.Model
	setEngineAuth(req.Header, g.tr.keyFor(model))
	g.tr.setRank(req.Header, a)
	uncached := p.PromptTokens - a.CachedTokens
	answered, end := g.tr.load.BeginPrefill(rid, p.PromptTokens, uncached)
	defer end()
	resp, err := g.tr.base.RoundTrip(req)
	attempts := g.d.Metrics.Attempts
	if err != nil {
		if c.Request.Context().Err() != nil {
			attempts.WithLabelValues("canceled").Inc()
			return disagg.Params{}, nil, 0, err
		}
		attempts.WithLabelValues("connect_error").Inc()
		g.tr.health.Failed(rid)
		return disagg.Params{}, nil, 0, fmt.Errorf("prefill replica %s (%s): %w", rid, a.Address, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, disagg.MaxPrefillResponse+1))
	answered()
	switch {
	case err != nil:
		attempts.WithLabelValues("connect_error").Inc()
		g.tr.health.Failed(rid)
		return disagg.Params{}, nil, resp.StatusCode, fmt.Errorf("prefill replica %s: reading its answer: %w", rid, err)
	case resp.StatusCode == http.StatusUnauthorized:
		attempts.WithLabelValues("engine_unauthorized").Inc()
		return disagg.Params{}, nil, resp.StatusCode, engineRefused(rid, model, req.Header)
	case retryStatus(resp.StatusCode) || resp.StatusCode >= 500:
		attempts.WithLabelValues("retry_status").Inc()
		if resp.StatusCode != http.StatusTooManyRequests {
			g.tr.health.Failed(rid)
		}
		return disagg.Params{}, nil, resp.StatusCode, fmt.Errorf("prefill replica %s answered %s", rid, resp.Status)
	case resp.StatusCode != http.StatusOK:
		attempts.WithLabelValues("ok").Inc()
		g.tr.health.Succeeded(rid)
		return disagg.Params{}, &refusal{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: b}, resp.StatusCode, nil
	}
	params, err := disagg.ParsePrefillResponse(b)
	if err != nil {
		// A replica that answers without transfer parameters runs without
		// a KV connector: it counts as failing, so its breaker opens.
		attempts.WithLabelValues("bad_prefill_response").Inc()
		g.tr.health.Failed(rid)
		return disagg.Params{}, nil, resp.StatusCode, fmt.Errorf("prefill replica %s: %w", rid, err)
	}
	attempts.WithLabelValues("ok").Inc()
	g.tr.health.Succeeded(rid)
	return params, nil, resp.StatusCode, nil
}

// answerWith sends the client a prefill replica's refusal.
func (g *Gateway) answerWith(w http.ResponseWriter, r *refusal) {
	if r.ctype != "" {
		w.Header().Set("Content-Type", r.ctype)
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
}

// requestID is a fresh id for both steps of one request, as vLLM's proxy
// examples use a random UUID.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return "llmgw-pd-" + hex.EncodeToString(b[:])
}
