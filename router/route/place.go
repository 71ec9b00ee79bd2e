package route

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// Place plans a request that needs a replica of model but makes no
// prompt decision: vLLM's /tokenize and /detokenize. The tenant must be
// allowed the model, and its request rate and concurrency limits are
// charged (no tokens: these paths generate none). The replicas are
// ranked by the scheduler with an empty prompt, so its filters (model,
// health, drain, busy) and its load scorers decide, as for any request,
// and nothing is learned from it: Sent and Served record nothing, no
// prefix is credited and no session pinned. A body that names no model
// takes the one model the key may use, as vLLM takes the one it serves;
// where the key may use several, that is a 400.
func (pl *Planner) Place(ctx context.Context, model string) (*Plan, *Error) {
	ten := tenant.FromContext(ctx)
	if model == "" {
		models := pl.allowed(ten)
		if len(models) != 1 {
			return nil, &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("the request names no model, and this key may use %d; set model", len(models))}
		}
		model = models[0]
	}
	return pl.place(ctx, ten, model)
}

// PlaceAny plans a request any replica can answer, of any model the key
// may use: vLLM's /version.
func (pl *Planner) PlaceAny(ctx context.Context) (*Plan, *Error) {
	ten := tenant.FromContext(ctx)
	models := pl.allowed(ten)
	if len(models) == 0 {
		return nil, &Error{Status: http.StatusServiceUnavailable, Message: "no replica serves a model this key may use"}
	}
	return pl.place(ctx, ten, models[0])
}

func (pl *Planner) place(ctx context.Context, ten *tenant.Tenant, model string) (*Plan, *Error) {
	start := time.Now()
	if !ten.Allows(model) {
		return nil, notFound(model)
	}
	t, e := pl.target(model)
	if e != nil {
		return nil, e
	}
	grant, limits, e := pl.limitTokens(ten, 0, false)
	if e != nil {
		return nil, e
	}
	p := pl.getPlan()
	p.utility = true
	p.Grant, p.Limits = grant, limits
	p.sreq.Reset(scheduler.Request{Model: t.Model, Fallbacks: pl.d.Options.Attempts - 1 + fallbackSpare})
	var err error
	p.decision, p.cands, err = schedule(ctx, pl.d.Replicas, pl.d.Scheduler, t.Model, &p.sreq, p.cands[:0], nil)
	if err != nil {
		grant.Finish(0)
		pl.Release(p)
		switch {
		case errors.Is(err, scheduler.ErrAllBusy):
			return nil, busy(model, nil)
		case errors.Is(err, scheduler.ErrNoReplica):
			return nil, &Error{Status: http.StatusServiceUnavailable, Message: "no healthy replica serves " + model}
		}
		return nil, &Error{Status: http.StatusInternalServerError, Message: "scheduling failed: " + err.Error()}
	}
	p.Attempts = pl.attempts(p.Attempts[:0], &p.decision, 0, nil)
	p.Overhead = time.Since(start)
	return p, nil
}

// allowed lists the base models the fleet serves that t may use.
func (pl *Planner) allowed(t *tenant.Tenant) []string {
	var out []string
	for _, m := range pl.d.Replicas.Models() {
		if t.Allows(m) {
			out = append(out, m)
		}
	}
	return out
}

// notFound is OpenAI's answer for a model that does not exist or that
// the key may not use: the two are not told apart.
func notFound(model string) *Error {
	return &Error{Status: http.StatusNotFound, Type: openai.TypeInvalidRequest, Code: openai.CodeModelNotFound,
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
}
