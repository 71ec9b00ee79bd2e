package server

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
)

// Tasks a simulated model serves, as vLLM names them (vllm/tasks.py):
// --runner pooling with --convert embed or classify makes a pooling model.
const (
	TaskGenerate = "generate"
	TaskEmbed    = "embed"
	TaskClassify = "classify"
)

// hiddenSize is the length of a simulated embedding.
const hiddenSize = 64

// hidden is the simulated hidden state of a prompt's last token: a pure
// function of every token of the prompt, as causal attention with LAST
// pooling makes it, of length 1.
func hidden(ids []uint32) []float64 {
	h := fnv.New64a()
	var b [4]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint32(b[:], id)
		_, _ = h.Write(b[:])
	}
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float64, hiddenSize)
	var norm float64
	for i := range v {
		v[i] = rng.NormFloat64()
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

// probs is a classifier head over the hidden state: numLabels logits,
// through a softmax (a sigmoid for one label), vLLM's default activation.
func probs(v []float64, numLabels int) []float64 {
	out := make([]float64, numLabels)
	if numLabels == 1 {
		out[0] = 1 / (1 + math.Exp(-8*v[0]))
		return out
	}
	var sum float64
	for i := range out {
		out[i] = math.Exp(8 * v[i%len(v)])
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// pooled is one finished pooling request: the prompt and how much of it
// the prefix cache served.
type pooled struct {
	ids    []uint32
	cached int
}

// runPooling computes the prompts on the engines, as vLLM runs a pooling
// request: one prefill each, through the KV cache (and its prefix cache and
// events), no token generated. It returns once all have finished.
func (s *Server) runPooling(ctx context.Context, model, salt string, prompts [][]uint32) ([]pooled, error) {
	arrival := time.Now()
	if err := engine.SleepUntil(ctx, arrival.Add(s.opts.Overhead)); err != nil {
		return nil, err
	}
	reqs := make([]*engine.Request, len(prompts))
	for i, p := range prompts {
		r := &engine.Request{
			ID: requestID("pool", s.counter.Add(1)), Ctx: ctx, Prompt: p, Pool: true,
			Arrival: arrival, CacheSalt: salt, Out: make(chan engine.Token, 1),
		}
		if l, ok := s.lora(model); ok {
			r.LoRA, r.LoRAID = l.Name, l.ID
		}
		rank, err := s.pick(ctx, r)
		if err != nil {
			return nil, err
		}
		if err := rank.Engine.Submit(r); err != nil {
			r.Left()
			return nil, &apiError{status: http.StatusServiceUnavailable, typ: "ServiceUnavailableError", msg: fmt.Sprintf("engine overloaded: %v", err)}
		}
		reqs[i] = r
	}
	out := make([]pooled, len(prompts))
	for i, r := range reqs {
		t, ok := <-r.Out
		if !ok || t.FinishReason == "abort" {
			return nil, errors.New("request aborted")
		}
		out[i] = pooled{ids: r.Prompt, cached: t.CachedTokens}
	}
	return out, nil
}

// usageOfPooled is vLLM's get_pooling_usage: the prompt tokens, also
// the total.
func usageOfPooled(done []pooled) poolingUsage {
	var u poolingUsage
	for _, d := range done {
		u.PromptTokens += len(d.ids)
	}
	u.TotalTokens = u.PromptTokens
	return u
}

// poolingPrompts tokenizes a pooling request: a chat conversation in
// messages, or in input as a list of messages (no generation prompt and no
// special tokens by default), else input in the completion forms (special
// tokens added by default). Each prompt must fit max_model_len.
func (s *Server) poolingPrompts(body []byte, req *poolingRequest, operation string) ([][]uint32, *apiError) {
	msgs, chat, err := chatInput(req)
	if err != nil {
		return nil, err
	}
	var prompts [][]uint32
	if chat {
		gen := req.AddGenerationPrompt != nil && *req.AddGenerationPrompt
		ids, err := s.renderChatAs(body, msgs, &gen, req.ContinueFinalMessage, req.AddSpecialTokens != nil && *req.AddSpecialTokens, true)
		if err != nil {
			return nil, err
		}
		prompts = [][]uint32{ids}
	} else {
		if len(req.Input) == 0 || string(req.Input) == "null" {
			return nil, badRequest("input is required")
		}
		prompts, err = s.prompts(req.Input, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
		if err != nil {
			return nil, badRequest("input must be a string, a list of strings, a list of token ids or a list of token id lists")
		}
	}
	for _, p := range prompts {
		if err := s.checkInputLength(len(p), operation); err != nil {
			return nil, err
		}
	}
	return prompts, nil
}

// chatInput reads a pooling request's conversation: messages, else input
// when it is a list of messages.
func chatInput(req *poolingRequest) ([]chatMessage, bool, *apiError) {
	raw := req.Messages
	if len(raw) == 0 || string(raw) == "null" {
		var probe []map[string]json.RawMessage
		if json.Unmarshal(req.Input, &probe) != nil || len(probe) == 0 || probe[0]["role"] == nil {
			return nil, false, nil
		}
		raw = req.Input
	}
	var msgs []chatMessage
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return nil, false, badRequest("messages must be a non-empty list of chat messages")
	}
	return msgs, true, nil
}

// checkInputLength is vLLM's check of a pooling input against
// max_model_len, in its words.
func (s *Server) checkInputLength(n int, operation string) *apiError {
	if n > s.opts.MaxModelLen {
		return badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens in the input for %s. Please reduce the length of the input.",
			s.opts.MaxModelLen, n, operation)
	}
	return nil
}

// readPooling decodes a pooling request, its cache salt and its prompts,
// answering the client itself on failure.
func (s *Server) readPooling(w http.ResponseWriter, r *http.Request, operation string) (*poolingRequest, string, [][]uint32, bool) {
	var req poolingRequest
	body, ok := s.readRequest(w, r, &req)
	if !ok {
		return nil, "", nil, false
	}
	salt, err := cacheSalt(req.CacheSalt)
	if err == nil && req.Dimensions != nil {
		err = badRequest("Model \"%s\" does not support matryoshka representation, changing output dimensions will lead to poor results.", s.modelName(req.Model))
	}
	var prompts [][]uint32
	if err == nil {
		prompts, err = s.poolingPrompts(body, &req, operation)
	}
	if err != nil {
		writeError(w, err)
		return nil, "", nil, false
	}
	return &req, salt, prompts, true
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	req, salt, prompts, ok := s.readPooling(w, r, "embedding generation")
	if !ok {
		return
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		writeError(w, badRequest("the simulator answers encoding_format \"float\" or \"base64\", not %q", f))
		return
	}
	done, err := s.runPooling(r.Context(), req.Model, salt, prompts)
	if err != nil {
		writeError(w, err)
		return
	}
	data := make([]embeddingData, len(done))
	for i, d := range done {
		data[i] = embeddingData{Index: i, Object: "embedding", Embedding: encodeVector(hidden(d.ids), req.EncodingFormat)}
	}
	writeJSON(w, http.StatusOK, listResponse{ID: requestID("embd", s.counter.Add(1)), Object: "list", Created: time.Now().Unix(), Model: s.modelName(req.Model), Data: data, Usage: usageOfPooled(done)})
}

// encodeVector is an embedding as encoding_format asks: floats, or
// base64 of little-endian float32s.
func encodeVector(v []float64, format string) any {
	if format != "base64" {
		return v
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(x)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func (s *Server) classify(w http.ResponseWriter, r *http.Request) {
	req, salt, prompts, ok := s.readPooling(w, r, "classification")
	if !ok {
		return
	}
	done, err := s.runPooling(r.Context(), req.Model, salt, prompts)
	if err != nil {
		writeError(w, err)
		return
	}
	data := make([]classifyData, len(done))
	for i, d := range done {
		p := probs(hidden(d.ids), s.opts.NumLabels)
		data[i] = classifyData{Index: i, Label: fmt.Sprintf("LABEL_%d", argmax(p)), Probs: p, NumClasses: len(p)}
	}
	writeJSON(w, http.StatusOK, listResponse{ID: requestID("classify", s.counter.Add(1)), Object: "list", Created: time.Now().Unix(), Model: s.modelName(req.Model), Data: data, Usage: usageOfPooled(done)})
}

// pooling serves /pooling: the model's pooling task's raw output, the
// embedding or the class probabilities.
func (s *Server) pooling(w http.ResponseWriter, r *http.Request) {
	req, salt, prompts, ok := s.readPooling(w, r, "pooling")
	if !ok {
		return
	}
	if req.Task != "" && req.Task != s.opts.Task {
		writeError(w, badRequest("Task %s is not supported, it must be one of the supported tasks: ['%s']", req.Task, s.opts.Task))
		return
	}
	done, err := s.runPooling(r.Context(), req.Model, salt, prompts)
	if err != nil {
		writeError(w, err)
		return
	}
	data := make([]poolingData, len(done))
	for i, d := range done {
		var out any = hidden(d.ids)
		if s.opts.Task == TaskClassify {
			out = probs(hidden(d.ids), s.opts.NumLabels)
		}
		data[i] = poolingData{Index: i, Object: "pooling", Data: out}
	}
	writeJSON(w, http.StatusOK, listResponse{ID: requestID("pool", s.counter.Add(1)), Object: "list", Created: time.Now().Unix(), Model: s.modelName(req.Model), Data: data, Usage: usageOfPooled(done)})
}

func argmax(p []float64) int {
	best := 0
	for i, x := range p {
		if x > p[best] {
			best = i
		}
	}
	return best
}
