package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/migrate"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/tracing"
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
func (g *Gateway) planMigration(rt *routing, kind openai.Kind, p *route.Plan, session string) {
	mig := g.d.Options.Migration
	if !mig.Enabled || !p.Request.Stream || p.Request.Forward != nil {
		return // Responses and Messages streams are not migrated (see the README)
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
	log, model := g.d.Logger, p.Request.Model
	hooks := migrate.Hooks{
		Attempted: func(string, int) { m.results.WithLabelValues("attempted").Inc() },
		Migrated: func(from, to string, carried int) {
			m.results.WithLabelValues("migrated").Inc()
			log.Info("stream migrated", "model", model, "from", from, "to", to, "carried_tokens", carried)
		},
		Succeeded: func() { m.results.WithLabelValues("succeeded").Inc() },
		Refused: func(replica, reason string, cause error) {
			m.refused.WithLabelValues(reason).Inc()
			log.Warn("replica failed mid-stream; not migrated", "replica", replica, "reason", reason, "error", cause)
		},
	}
	limits := migrate.Limits{MaxAttempts: mig.MaxAttempts, MaxTokens: mig.MaxTokens}
	promptTokens := 0
	if p.ExactTokens { // counted by a tokenizer, not guessed from text
		promptTokens = p.PromptTokens
	}
	rt.wrap = func(resp *http.Response, replica string) io.ReadCloser {
		re := reissuer{g: g, kind: kind, out: resp.Request, session: session, freshID: rt.remotePrefill}
		return migrate.NewStream(resp.Request.Context(), resp.Body, replica, mp, re, limits, hooks, promptTokens)
	}
}

// reissuer sends a continuation as the gateway routes any request, but
// planned by route.Planner.Reschedule: without the admission queue and
// the tenant's limits (the request was admitted and charged once), the
// failed replicas left out.
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

// The continuation is one SpanMigrate, a child of the request's server
// span, holding the continuation's SpanUpstream.
func (r reissuer) Reissue(ctx context.Context, body []byte, failed []string) (io.ReadCloser, string, error) {
	ctx, span := tracing.Start(ctx, SpanMigrate, trace.SpanKindInternal)
	if span.IsRecording() {
		span.SetAttributes(attrMigrateFailed.StringSlice(failed))
	}
	rc, id, err := r.reissue(ctx, body, failed)
	if span.IsRecording() && id != "" {
		span.SetAttributes(route.AttrReplica.String(id))
	}
	endEngineSpan(span, 0, err)
	return rc, id, err
}

// reissue is Reissue without its span.
func (r reissuer) reissue(ctx context.Context, body []byte, failed []string) (io.ReadCloser, string, error) {
	p, err := r.g.d.Planner.Reschedule(ctx, r.kind, body, r.session, failed)
	if err != nil {
		return nil, "", err
	}
	rt := newRouting(body, p)
	out := r.out.Clone(context.WithValue(ctx, routeKey{}, rt))
	if r.freshID {
		out.Header.Set(disagg.HeaderRequestID, requestID())
	}
	resp, err := r.g.tr.RoundTrip(out)
	if err != nil {
		return nil, "", err
	}
	rt.mu.Lock()
	id := rt.attempts[rt.served].Replica
	rt.mu.Unlock()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, "", fmt.Errorf("replica %s answered the continuation with %s: %s", id, resp.Status, msg)
	}
	return resp.Body, id, nil
}
