package prompt

import (
	"context"
	"encoding/json"
	"strings"

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
		if hasMedia(r.Body) || harmonyByName(t.Model) {
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

// harmonyByName reports whether model is named as a gpt-oss model is
// served by default ("openai/gpt-oss-20b"). vLLM's /tokenize renders chat
// messages with the Jinja template even for gpt-oss, whose chat path
// renders Harmony (router/harmony): engine ids would key every chat
// prompt wrongly, so such a model is keyed approximately unless its
// tokenizer_dir, whose config.json names it gpt_oss, lets the router
// render Harmony itself. A gpt-oss model served under another name is not
// recognised here; give it a tokenizer_dir.
func harmonyByName(model string) bool {
	return strings.Contains(strings.ToLower(model), "gpt-oss")
}

// textParts are the content part types that carry only text; any other
// part (image_url, input_audio, video_url, embeddings ...) is media.
var textParts = map[string]bool{"": true, "text": true, "input_text": true, "output_text": true, "refusal": true, "thinking": true}

// mediaFields make a part media whatever its type says, as vLLM reads a
// part without a type by its fields.
var mediaFields = []string{"image_url", "image_pil", "image_embeds", "audio_url", "input_audio", "audio_embeds", "video_url", "prompt_embeds"}

// hasMedia reports whether a chat body's messages carry a media part. A
// body it cannot read has none: the engine judges it.
func hasMedia(body []byte) bool {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	for _, m := range req.Messages {
		var parts []map[string]json.RawMessage
		if json.Unmarshal(m.Content, &parts) != nil {
			continue // a string, null, or not parts
		}
		for _, p := range parts {
			var typ string
			if raw, ok := p["type"]; ok && json.Unmarshal(raw, &typ) != nil {
				return true
			}
			if !textParts[typ] {
				return true
			}
			for _, f := range mediaFields {
				if _, ok := p[f]; ok {
					return true
				}
			}
		}
	}
	return false
}
