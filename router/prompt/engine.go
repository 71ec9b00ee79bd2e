package prompt

import (
	"context"
	"errors"

	"github.com/llmgw/llmgw/router/chattemplate"
	"github.com/llmgw/llmgw/router/openai"
)

// Remote tokenizes a prompt on one of a model's engines, as vLLM's
// /tokenize does (router/enginetok implements it). It is how the router
// keys a model exactly without local tokenizer files, vllm-sim's included,
// at the cost of one round trip per request; a local tokenizer (Dir) is
// preferred in production.
type Remote interface {
	// Tokenize returns the ids the engines of model compute for r's prompt:
	// r.Prompt with r.AddSpecialTokens for a completion, r's messages
	// rendered with the model's chat template for a chat. An error means
	// no ids; the request is keyed approximately.
	Tokenize(ctx context.Context, model string, r *openai.Request) ([]uint32, error)
}

// remote is model's Remote, nil when it has none.
func (p *Prompts) remote(model string) Remote {
	return p.sources[model].Remote
}

// computeRemote keys r with the ids model's engines give it. A prompt the
// engines cannot reproduce exactly for the router (media parts) or a failed
// round trip is keyed approximately, the failure in RemoteErr: the request
// still routes, and the replica answers it as it would have anyway.
func (p *Prompts) computeRemote(ctx context.Context, rem Remote, r *openai.Request, t Target) Result {
	if r.Kind == openai.Chat {
		// The engine would fetch and process the media; placeholder tokens
		// are its processor's, as with a local tokenizer: route on text.
		if _, err := chattemplate.ParseRequest(r.Body); errors.Is(err, chattemplate.ErrMultimodal) {
			return p.approx(r, t)
		}
	}
	t0 := p.now()
	ids, err := rem.Tokenize(ctx, t.Model, r)
	took := p.now().Sub(t0)
	if err != nil {
		res := p.approx(r, t)
		res.Tokenize, res.RemoteErr = took, err
		return res
	}
	res := Result{Tokenize: took}
	p.key(&res, ids, r, t)
	return res
}
