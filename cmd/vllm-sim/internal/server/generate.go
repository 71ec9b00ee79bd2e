package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
)

// lexicon is what the simulated model says: plain words, so that outputs
// tokenize to realistic lengths under any tokenizer.
var lexicon = strings.Fields(`the of and to in a is that for it as was with be by on not he this are or
his from at which but have an they you were her she there been one all we their has would when if
so no what up out more will into some time could them other than then now only its over also new
cache prefix token block router replica engine model request latency memory shard`)

// output decides the tokens the "model" produces for a request: words drawn
// from a seeded generator (the request's seed, else the server's seed and a
// request counter), cut at maxTokens, or earlier at a simulated EOS unless
// ignoreEOS. It returns the ids and the finish reason.
func (s *Server) output(maxTokens int, seed *int64, ignoreEOS bool) ([]uint32, string) {
	var rng *rand.Rand
	if seed != nil {
		rng = rand.New(rand.NewPCG(uint64(*seed), 0))
	} else {
		rng = rand.New(rand.NewPCG(uint64(s.opts.Seed), s.counter.Add(1)))
	}
	n, reason := maxTokens, "length"
	if !ignoreEOS && s.opts.MeanOutputTokens > 0 {
		if eos := 1 + rng.IntN(2*s.opts.MeanOutputTokens); eos < maxTokens {
			n, reason = eos, "stop"
		}
	}
	ids := make([]uint32, 0, n+8)
	var sb strings.Builder
	for len(ids) < n {
		sb.Reset()
		for range 8 {
			sb.WriteByte(' ')
			sb.WriteString(lexicon[rng.IntN(len(lexicon))])
		}
		ids = append(ids, s.tok.Encode(sb.String(), false)...)
	}
	return ids[:n], reason
}

// checkLength enforces max-model-len the way vLLM words it.
func (s *Server) checkLength(promptTokens, maxTokens int) *apiError {
	if promptTokens+maxTokens > s.opts.MaxModelLen {
		return badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.opts.MaxModelLen, promptTokens+maxTokens, promptTokens, maxTokens)
	}
	return nil
}

// generation is one submitted request.
type generation struct {
	req    *engine.Request
	prompt int
	rank   Rank
	held   [][]int // the blocks held for a decode instance, once finished
}

// submit spends the API overhead, then hands the request to the rank its
// X-data-parallel-rank header names, else the least loaded (pick); salt is the request's cache_salt ("" for none), kv its
// kv_transfer_params and stream whether it is streamed.
func (s *Server) submit(ctx context.Context, model, salt string, prompt []uint32, out []uint32, reason string, kv kvxfer.Params, stream bool) (*generation, error) {
	arrival := time.Now()
	if err := engine.SleepUntil(ctx, arrival.Add(s.opts.Overhead)); err != nil {
		return nil, err
	}
	r := &engine.Request{
		ID: requestID("req", s.counter.Add(1)), Ctx: ctx, Prompt: prompt,
		Output: out, FinishReason: reason, Arrival: arrival, CacheSalt: salt,
		Out: make(chan engine.Token, len(out)+1),
	}
	if l, ok := s.lora(model); ok {
		r.LoRA, r.LoRAID = l.Name, l.ID
	}
	rank, err := s.pick(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := s.prepareTransfer(ctx, rank, r, kv, stream); err != nil {
		r.Left()
		return nil, err
	}
	if err := rank.Engine.Submit(r); err != nil {
		r.Left()
		return nil, &apiError{status: 503, typ: "ServiceUnavailableError", msg: fmt.Sprintf("engine overloaded: %v", err)}
	}
	return &generation{req: r, prompt: len(prompt), rank: rank}, nil
}

// result is a finished generation.
type result struct {
	ids    []uint32
	reason string
	cached int
}

// wait collects a generation's tokens; it fails when the request was aborted.
func (g *generation) wait() (result, error) {
	var res result
	for t := range g.req.Out {
		if t.FinishReason == "abort" {
			return res, fmt.Errorf("request aborted")
		}
		res.ids = append(res.ids, t.ID)
		res.cached = t.CachedTokens
		if t.Final {
			res.reason, g.held = t.FinishReason, t.Held
			return res, nil
		}
	}
	return res, fmt.Errorf("engine closed the request")
}

// finish waits for a non-streamed generation and decodes its text. When it
// reports false the reply is settled: the client went away, or the decode
// error has been written.
func (s *Server) finish(w http.ResponseWriter, g *generation) (result, string, bool) {
	res, err := g.wait()
	if err != nil {
		return res, "", false // the client went away
	}
	text, err := s.tok.Decode(res.ids, true)
	if err != nil {
		writeError(w, fmt.Errorf("decode output: %w", err))
		return res, "", false
	}
	return res, text, true
}

// detok turns a growing id list into text deltas, holding back a delta that
// ends inside a multi-byte character.
type detok struct {
	tok  Tokenizer
	ids  []uint32
	sent int // bytes of text already emitted
}

func (d *detok) next(id uint32) string {
	d.ids = append(d.ids, id)
	text, err := d.tok.Decode(d.ids, true)
	if err != nil || len(text) < d.sent || strings.HasSuffix(text, "\uFFFD") {
		return ""
	}
	delta := text[d.sent:]
	d.sent = len(text)
	return delta
}

// usageOf is a generation's usage without prompt_tokens_details.
func usageOf(prompt int, res result) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: len(res.ids), TotalTokens: prompt + len(res.ids)}
}

// chatUsage is a chat answer's usage. vLLM's chat serving
// (_make_prompt_tokens_details) adds prompt_tokens_details only with
// --enable-prompt-tokens-details, and then always, cached_tokens 0
// included.
func (s *Server) chatUsage(prompt int, res result) *usage {
	u := usageOf(prompt, res)
	if s.opts.PromptTokensDetails {
		u.PromptTokensDetails = &promptDetails{CachedTokens: res.cached}
	}
	return u
}

// completionDetails is a completion answer's prompt_tokens_details:
// vLLM's completion serving adds it only with
// --enable-prompt-tokens-details and only when some prompt tokens were
// cached (a 0 is left out).
func (s *Server) completionDetails(cached int) *promptDetails {
	if !s.opts.PromptTokensDetails || cached == 0 {
		return nil
	}
	return &promptDetails{CachedTokens: cached}
}
