package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// prompts decodes a completions prompt in any of its four forms: a string,
// a list of strings, a list of token ids, or a list of such lists.
func (s *Server) prompts(raw json.RawMessage, addSpecial bool) ([][]uint32, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt is required")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return [][]uint32{s.tok.Encode(text, addSpecial)}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		out := make([][]uint32, len(texts))
		for i, t := range texts {
			out[i] = s.tok.Encode(t, addSpecial)
		}
		return out, nil
	}
	var ids []uint32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return [][]uint32{ids}, nil
	}
	var batch [][]uint32
	if json.Unmarshal(raw, &batch) == nil && len(batch) > 0 {
		for i, p := range batch {
			if len(p) == 0 {
				return nil, badRequest("prompt %d is empty", i)
			}
		}
		return batch, nil
	}
	return nil, badRequest("prompt must be a string, a list of strings, a list of token ids or a list of token id lists")
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if _, ok := s.readRequest(w, r, &req); !ok {
		return
	}
	salt, serr := cacheSalt(req.CacheSalt)
	if serr != nil {
		writeError(w, serr)
		return
	}
	kv, kerr := s.transferParams(req.KVTransferParams)
	if kerr != nil {
		writeError(w, kerr)
		return
	}
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
	prompts, perr := s.prompts(req.Prompt, addSpecial)
	if perr != nil {
		writeError(w, perr)
		return
	}
	limits := make([]int, len(prompts))
	for i, p := range prompts {
		n, err := s.completionMaxTokens(req.MaxTokens, len(p))
		if err == nil && n < 1 {
			err = badRequest("max_tokens must be at least 1, got %d", n)
		}
		if err == nil {
			err = s.checkLength(len(p), n)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		limits[i] = n
	}
	if (kv.DoRemoteDecode || kv.DoRemotePrefill) && len(prompts) > 1 {
		writeError(w, badRequest("kv_transfer_params applies to one prompt; got %d", len(prompts)))
		return
	}
	if req.Stream && len(prompts) > 1 {
		writeError(w, badRequest("the simulator streams one prompt per request; got %d", len(prompts)))
		return
	}
	id := requestID("cmpl", s.counter.Add(1))
	model := s.modelName(req.Model)
	gens := make([]*generation, len(prompts))
	for i, p := range prompts {
		out, reason := s.output(limits[i], req.Seed, req.IgnoreEOS)
		g, err := s.submit(r.Context(), req.Model, salt, p, out, reason, kv, req.Stream)
		if err != nil {
			writeError(w, err)
			return
		}
		gens[i] = g
	}
	if req.Stream {
		s.streamCompletion(w, id, model, gens[0], req.StreamOptions != nil && req.StreamOptions.IncludeUsage, req.ReturnTokenIDs)
		return
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: time.Now().Unix(), Model: model, Usage: &usage{}}
	for i, g := range gens {
		res, text, ok := s.finish(w, g)
		if !ok {
			return
		}
		ch := completionChoice{Index: i, Text: text, FinishReason: &res.reason}
		if req.ReturnTokenIDs {
			ch.PromptTokenIDs, ch.TokenIDs = g.req.Prompt, res.ids
		}
		resp.Choices = append(resp.Choices, ch)
		u := usageOf(g.prompt, res)
		resp.Usage.PromptTokens += u.PromptTokens
		resp.Usage.CompletionTokens += u.CompletionTokens
		resp.Usage.TotalTokens += u.TotalTokens
		// vLLM reports the last prompt's cached tokens for the batch
		// (request_output_to_completion_response: last_final_res).
		resp.Usage.PromptTokensDetails = s.completionDetails(res.cached)
	}
	resp.KVTransferParams = s.transferResult(gens[0])
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) streamCompletion(w http.ResponseWriter, id, model string, g *generation, includeUsage, tokenIDs bool) {
	created := time.Now().Unix()
	resp := func(choices []completionChoice, u *usage) completionResponse {
		return completionResponse{ID: id, Object: "text_completion", Created: created, Model: model, Choices: choices, Usage: u}
	}
	prompt := g.req.Prompt // sent once, with the first chunk, as vLLM does
	s.stream(newSSE(w), g, includeUsage, nil,
		func(text string, tok uint32, finish *string) any {
			c := completionChoice{Text: text, FinishReason: finish}
			if tokenIDs {
				c.PromptTokenIDs, c.TokenIDs, prompt = prompt, []uint32{tok}, nil
			}
			return resp([]completionChoice{c}, nil)
		},
		func(res result) any {
			u := usageOf(g.prompt, res)
			u.PromptTokensDetails, u.inChunk = s.completionDetails(res.cached), true
			return resp([]completionChoice{}, u)
		})
}

// stream sends a generation's tokens as SSE chunks made by chunk, the finish
// reason on the last one (chunk gets each token's text delta and id), then a usage chunk when asked, then [DONE]; head,
// when not nil, goes out just before the first token's chunk. It stops
// quietly when the client goes away.
func (s *Server) stream(st *sse, g *generation, includeUsage bool, head any, chunk func(text string, id uint32, finish *string) any, usageChunk func(result) any) {
	d := &detok{tok: s.tok}
	var res result
	for t := range g.req.Out {
		if t.FinishReason == "abort" {
			return
		}
		if head != nil {
			if st.send(head) != nil {
				return
			}
			head = nil
		}
		res.ids = append(res.ids, t.ID)
		res.cached = t.CachedTokens
		var finish *string
		if t.Final {
			reason := t.FinishReason
			finish = &reason
		}
		if st.send(chunk(d.next(t.ID), t.ID, finish)) != nil {
			return
		}
		if t.Final {
			break
		}
	}
	if includeUsage {
		_ = st.send(usageChunk(res))
	}
	st.done()
}

// sse writes server-sent events, flushing each so clients see every token
// as it is produced.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	// vLLM returns a StreamingResponse as soon as the request is accepted,
	// and uvicorn writes its status line and headers on
	// http.response.start: a client (a router) has them before the first
	// token, while the prompt is still being prefilled.
	f, _ := w.(http.Flusher)
	if f != nil {
		f.Flush()
	}
	return &sse{w: w, f: f}
}

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		return err
	}
	if s.f != nil {
		s.f.Flush()
	}
	return nil
}

func (s *sse) done() {
	_, _ = fmt.Fprint(s.w, "data: [DONE]\n\n")
	if s.f != nil {
		s.f.Flush()
	}
}
