package route

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The planner's spans, children of the request's server span when it is
// recorded (router/tracing): the whole decision, and within it the
// admission wait (which holds the scheduling tries made while waiting).
const (
	SpanRoute     = "llmgw.route"
	SpanAdmission = "llmgw.admission"
)

// The attributes of the planner's spans that no semantic convention
// names. AttrScorePrefix + a scorer's name is that scorer's part of the
// chosen replica's total: its weight times its score.
const (
	AttrReplica        = attribute.Key("llmgw.replica")
	AttrMode           = attribute.Key("llmgw.route.mode")
	AttrCachedTokens   = attribute.Key("llmgw.route.cached_tokens")
	AttrPromptTokens   = attribute.Key("llmgw.route.prompt_tokens")
	AttrExactTokens    = attribute.Key("llmgw.route.exact_tokens")
	AttrScoreTotal     = attribute.Key("llmgw.route.score")
	AttrScorePrefix    = "llmgw.route.score."
	AttrFallbacks      = attribute.Key("llmgw.route.fallbacks")
	AttrPrefillReplica = attribute.Key("llmgw.route.prefill_replica")
	AttrQueued         = attribute.Key("llmgw.admission.queued_seconds")
	AttrPriority       = attribute.Key("llmgw.admission.priority")
)

// traceDecision sets the decision span's attributes: the model, the
// chosen replica, how it was matched and what it is predicted to hold,
// each scorer's part of its total; or the refusal.
func traceDecision(span trace.Span, p *Plan, e *Error) {
	if e != nil {
		span.SetStatus(codes.Error, e.Message)
		return
	}
	span.SetAttributes(
		semconv.GenAIRequestModel(p.Request.Model),
		AttrPromptTokens.Int(p.PromptTokens),
		AttrExactTokens.Bool(p.ExactTokens),
		AttrFallbacks.Int(max(len(p.Attempts)-1, 0)),
	)
	if len(p.Attempts) > 0 {
		a := p.Attempts[0]
		span.SetAttributes(AttrReplica.String(a.Replica), AttrMode.String(string(a.Mode)), AttrCachedTokens.Int(a.CachedTokens))
	}
	d := &p.decision
	span.SetAttributes(AttrScoreTotal.Float64(d.Chosen.Total))
	for i, name := range d.Scorers {
		if i < len(d.Weights) && i < len(d.Chosen.Scores) {
			span.SetAttributes(attribute.Float64(AttrScorePrefix+name, d.Weights[i]*d.Chosen.Scores[i]))
		}
	}
	if p.pd.remote && len(p.pd.attempts) > 0 {
		span.SetAttributes(AttrPrefillReplica.String(p.pd.attempts[0].Replica))
	}
}

// traceAdmission sets the admission span's attributes: the priority
// band, the time spent waiting for a replica under its busy threshold,
// and why the request was refused, if it was.
func traceAdmission(span trace.Span, band int, queued time.Duration, err error) {
	span.SetAttributes(AttrPriority.Int(band), AttrQueued.Float64(queued.Seconds()))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
}
