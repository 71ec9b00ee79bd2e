package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/migrate"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Migration configures mid-stream migration (router/migrate): a stream
// whose replica fails after its first byte continues on the next-best
// replica, at most MaxAttempts times and carrying at most MaxTokens
// generated tokens.
type Migration struct {
	Enabled     bool
	MaxAttempts int
	MaxTokens   int
}

// migrationMetrics count mid-stream migrations.
type migrationMetrics struct {
	results *prometheus.CounterVec // result: attempted, migrated, succeeded
	refused *prometheus.CounterVec // reason
}

func newMigrationMetrics() *migrationMetrics {
	return &migrationMetrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_stream_migrations_total",
			Help: "Streams whose replica failed mid-stream, by result: attempted (a continuation was sent), migrated (another replica answered it), succeeded (the migrated stream reached [DONE]).",
		}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_stream_migrations_refused_total",
			Help: "Streams whose replica failed mid-stream and that ended with an error event instead of migrating, by reason (n, best_of, echo, logprobs, batch, suffix, structured_output, tool_calls, reasoning, no_token_ids, unparsed_event, attempts, budget, exhausted, no_replica).",
		}, []string{"reason"}),
	}
}

func (m *migrationMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.results, m.refused}
}

// planMigration makes a streamed request's route continue on another
// replica when its replica fails mid-stream, or end with an error event
// that says why it cannot. With migration off the route is left as it is.
func (g *Gateway) planMigration(rt *route, kind openai.Kind, p *plan, session string) {
	if !g.d.Migration.Enabled || !p.req.Stream {
		return
	}
	mp, refusal, err := migrate.Check(kind, rt.body)
	if err != nil || mp == nil && refusal == nil {
		return
	}
	m := g.d.Metrics.Migrations
	if refusal != nil {
		rt.wrap = func(resp *http.Response, replica string) io.ReadCloser {
			return &sseGuard{ReadCloser: resp.Body, ctx: resp.Request.Context(), replica: replica, log: g.d.Logger,
				note: "; not migrated: " + refusal.Detail, onFail: func() { m.refused.WithLabelValues(refusal.Reason).Inc() }}
		}
		return
	}
	rt.body = mp.Forward()
	log := g.d.Logger
	hooks := migrate.Hooks{
		Attempted: func(string, int) { m.results.WithLabelValues("attempted").Inc() },
		Migrated: func(from, to string, carried int) {
			m.results.WithLabelValues("migrated").Inc()
			log.Info("stream migrated", "model", p.req.Model, "from", from, "to", to, "carried_tokens", carried)
		},
		Succeeded: func() { m.results.WithLabelValues("succeeded").Inc() },
		Refused: func(replica, reason string, cause error) {
			m.refused.WithLabelValues(reason).Inc()
			log.Warn("replica failed mid-stream; not migrated", "replica", replica, "reason", reason, "error", cause)
		},
	}
	limits := migrate.Limits{MaxAttempts: g.d.Migration.MaxAttempts, MaxTokens: g.d.Migration.MaxTokens}
	promptTokens := 0
	if p.prompt.Keys != nil { // counted by a tokenizer, not guessed from text
		promptTokens = p.prompt.Tokens
	}
	rt.wrap = func(resp *http.Response, replica string) io.ReadCloser {
		re := reissuer{g: g, kind: kind, out: resp.Request, session: session, freshID: rt.remotePrefill}
		return migrate.NewStream(resp.Request.Context(), resp.Body, replica, mp, re, limits, hooks, promptTokens)
	}
}

// reissuer sends a continuation as the gateway routes any request, minus
// the admission queue and the tenant's limits (the request was admitted
// and charged once): the scheduler ranks the replicas for the
// continuation's prompt (on a disaggregated model, the decode and
// aggregated replicas first: scheduleContinuation), the failed ones are
// skipped, and the chosen one is credited with the continuation's prefix.
type reissuer struct {
	g       *Gateway
	kind    openai.Kind
	out     *http.Request // the request the failed replica was sent
	session string
	// freshID: the failed request carried the X-Request-Id of a prefill
	// step, which the prefill replica may still hold blocks under; the
	// continuation, a request of its own, gets a new one.
	freshID bool
}

func (r reissuer) Reissue(ctx context.Context, body []byte, failed []string) (io.ReadCloser, string, error) {
	g := r.g
	g.d.Replicas.Failed(failed[len(failed)-1]) // its breaker counts the failure
	req, err := openai.Parse(r.kind, body)
	if err != nil {
		return nil, "", fmt.Errorf("continuation: %w", err)
	}
	reps := g.d.Replicas.ForModel(req.Model)
	if len(reps) == 0 {
		return nil, "", fmt.Errorf("no replica serves %s", req.Model)
	}
	base, lora := reps[0].Model, ""
	if base != req.Model {
		lora = req.Model
	}
	res, err := g.d.Prompts.ComputeContext(ctx, req, prompt.Target{Model: base, LoRA: lora, BlockSize: reps[0].BlockSize})
	if err != nil {
		return nil, "", fmt.Errorf("continuation prompt: %w", err)
	}
	sreq := &scheduler.Request{}
	sreq.Reset(scheduler.Request{Model: base, Keys: res.Keys, ApproxKeys: res.ApproxKeys, BlockTokens: reps[0].BlockSize,
		PromptTokens: res.Tokens, SessionID: r.session, Fallbacks: len(failed) + g.d.Attempts - 1 + fallbackSpare})
	if res.Keys == nil {
		sreq.BlockTokens = prompt.TextChunk / 4
	}
	start := time.Now()
	d, err := g.scheduleContinuation(ctx, req.Model, sreq, failed)
	overhead := time.Since(start)
	if err != nil {
		return nil, "", fmt.Errorf("schedule the continuation: %w", err)
	}
	var attempts []attempt
	for _, rk := range append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...) {
		if len(attempts) == g.d.Attempts {
			break
		}
		if slices.Contains(failed, rk.Candidate.ID) {
			continue
		}
		if rep, ok := g.d.Replicas.Get(rk.Candidate.ID); ok {
			attempts = append(attempts, attempt{ranked: rk, address: rep.Address})
		}
	}
	if len(attempts) == 0 {
		return nil, "", fmt.Errorf("no healthy replica of %s but the failed %v", req.Model, failed)
	}
	rt := &route{body: body, attempts: attempts, promptTokens: res.Tokens, blockTokens: sreq.BlockTokens, served: -1}
	rt.onSend = func(sent scheduler.Ranked) { g.d.Scheduler.Routed(sreq, &sent.Candidate) } // the continuation's prefix is being cached there
	rt.onServed = func(chosen scheduler.Ranked) {
		g.d.Metrics.Decisions.WithLabelValues(string(chosen.Mode)).Inc()
		g.decisions.recordFrom(req.Model, &d, chosen, res.Tokens, sreq.BlockTokens, overhead, nil, failed[len(failed)-1])
	}
	out := r.out.Clone(context.WithValue(ctx, routeKey{}, rt))
	if r.freshID {
		out.Header.Set(disagg.HeaderRequestID, requestID())
	}
	resp, err := g.tr.RoundTrip(out)
	if err != nil {
		return nil, "", err
	}
	rt.mu.Lock()
	id := rt.attempts[rt.served].ranked.Candidate.ID
	rt.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, "", fmt.Errorf("replica %s answered the continuation with %s: %s", id, resp.Status, msg)
	}
	return resp.Body, id, nil
}
