package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/route"
)

// warmTimeout bounds one prefix copy: an idle replica computes a long
// prompt in seconds, and a copy nobody is waiting for must not hold a
// connection for the upstream timeout's minutes.
const warmTimeout = time.Minute

// maxWarms bounds the prefix copies in flight from one router. The
// scheduler only proposes idle replicas, so a handful is all a fleet can
// have; the bound keeps a misbehaving fleet (replicas that never answer)
// from growing goroutines.
const maxWarms = 64

// A copy's outcome, the result label of Metrics.Warms: answered, failed or
// refused by its replica, cut short by the router closing, or not sent
// because maxWarms were in flight.
const (
	warmOK       = "ok"
	warmError    = "error"
	warmCanceled = "canceled"
	warmSkipped  = "skipped"
)

// warmer sends the prefix copies the planner proposes (route.Plan.Warm)
// in the background. The gateway owns it: Close cancels the copies in
// flight and waits for their goroutines.
type warmer struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}
	sent   *prometheus.CounterVec // result
}

func newWarmer(m *Metrics) *warmer {
	// Every result from the start, at 0: a dashboard's rate() over a
	// series that appears with its first copy misses that copy.
	for _, result := range []string{warmOK, warmError, warmCanceled, warmSkipped} {
		m.Warms.WithLabelValues(result)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &warmer{ctx: ctx, cancel: cancel, slots: make(chan struct{}, maxWarms), sent: m.Warms}
}

func (w *warmer) close() {
	w.cancel()
	w.wg.Wait()
}

// warm sends the prompt's prefill alone to the replica the planner
// proposes to copy its shared prefix to, if any, and returns at once. The
// copy is counted on the replica's load (its uncached tokens, until it
// answers) and credited to its cache before warm returns, so the
// decisions that follow see it; its answer is read and dropped. A copy
// that fails costs nothing but the copy: the request itself goes where it
// was routed either way.
func (g *Gateway) warm(p *route.Plan) {
	a, path, ok := p.Warm()
	if !ok {
		return
	}
	w := g.warms
	select {
	case w.slots <- struct{}{}:
	default:
		w.sent.WithLabelValues(warmSkipped).Inc()
		return
	}
	body, err := disagg.PrefillOnlyBody(p.Request.Body)
	if err != nil { // openai.Parse took it as an object: only a bug gets here
		<-w.slots
		g.d.Logger.Error("cannot build the prefix copy", "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, warmTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.Address+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		<-w.slots
		g.d.Logger.Warn("cannot build the prefix copy", "replica", a.Replica, "error", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	setEngineAuth(req.Header, g.tr.keyFor(a.Model))
	answered, end := g.tr.load.BeginPrefill(a.Replica, p.PromptTokens, p.PromptTokens-a.CachedTokens)
	p.Warming(a)
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.slots }()
		defer cancel()
		defer end()
		w.sent.WithLabelValues(g.sendWarm(req, answered)).Inc()
	}()
}

// sendWarm is one prefix copy's exchange with its replica; it returns the
// outcome the metric counts: warmOK, warmError (no answer, or one that is
// not a success) or warmCanceled (the router is closing).
func (g *Gateway) sendWarm(req *http.Request, answered func()) string {
	resp, err := g.tr.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() != nil {
			return warmCanceled
		}
		g.d.Logger.Debug("prefix copy failed", "url", req.URL.String(), "error", err)
		return warmError
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, disagg.MaxPrefillResponse))
	answered()
	if err != nil || resp.StatusCode != http.StatusOK {
		g.d.Logger.Debug("prefix copy refused", "url", req.URL.String(), "status", resp.StatusCode, "error", err)
		return warmError
	}
	return warmOK
}
