package route

import (
	"fmt"
	"net/http"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// serves reports whether a replica of task answers kind's endpoint, as
// vLLM registers its routes by the model's tasks (build_app; pooling:
// factories.py register_pooling_api_routers): the generate routes for a
// generate model, /pooling for any pooling model, /v1/embeddings for
// embed, /classify for classify, score and rerank for embed and for
// classify. A classifier serves score and rerank only with one label,
// which the router does not know; its engine's 404 reaches the client.
func serves(task string, kind openai.Kind) bool {
	switch kind {
	case openai.Chat, openai.Completion:
		return task == replicas.TaskGenerate
	case openai.Embeddings:
		return task == replicas.TaskEmbed
	case openai.Classify:
		return task == replicas.TaskClassify
	case openai.Pooling, openai.Score, openai.Rerank:
		return task == replicas.TaskEmbed || task == replicas.TaskClassify
	}
	return false
}

// endpoints names kind's endpoint in messages.
var endpoints = map[openai.Kind]string{
	openai.Chat: "/v1/chat/completions", openai.Completion: "/v1/completions", openai.Embeddings: "/v1/embeddings",
	openai.Pooling: "/pooling", openai.Classify: "/classify", openai.Score: "/score", openai.Rerank: "/rerank",
}

// taskFilter checks that some replica of model (a base model) serves
// kind's endpoint, refusing the request with a 400 naming the model's
// task otherwise: a chat request to an embedding model, an embeddings
// request to a generative one. It returns the filter keeping only the
// replicas that serve it, nil when all do (a model's replicas normally
// serve one task; consul/README.md).
func (pl *Planner) taskFilter(model string, kind openai.Kind) (func(id string) bool, *Error) {
	reps := pl.d.Replicas.ForModel(model)
	n := 0
	for _, r := range reps {
		if serves(r.TaskOf(), kind) {
			n++
		}
	}
	switch {
	case n == len(reps):
		return nil, nil
	case n == 0:
		task := reps[0].TaskOf()
		what := "a generative model"
		if task != replicas.TaskGenerate {
			what = "a pooling model (task " + task + ")"
		}
		return nil, &Error{Status: http.StatusBadRequest, Type: openai.TypeInvalidRequest, Message: fmt.Sprintf(
			"The model `%s` is %s and does not serve %s.", model, what, endpoints[kind])}
	}
	set := pl.d.Replicas
	return func(id string) bool {
		r, ok := set.Get(id)
		return ok && serves(r.TaskOf(), kind)
	}, nil
}

// keepServing drops from cands the replicas keep refuses, in place; a nil
// keep keeps all.
func keepServing(cands []scheduler.Candidate, keep func(id string) bool) []scheduler.Candidate {
	if keep == nil {
		return cands
	}
	out := cands[:0]
	for _, c := range cands {
		if keep(c.ID) {
			out = append(out, c)
		}
	}
	return out
}
