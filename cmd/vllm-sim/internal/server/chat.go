package server

import (
	"encoding/json"
	"net/http"
	"time"
)

// normalize applies vLLM's message normalisation: list-style content parts
// are joined with a newline; a message needs a role.
func normalize(msgs []chatMessage) ([]Message, *apiError) {
	if len(msgs) == 0 {
		return nil, badRequest("messages must not be empty")
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return nil, badRequest("messages[%d]: role is required", i)
		}
		out[i].Role = m.Role
		if len(m.Content) == 0 || string(m.Content) == "null" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			out[i].Content = text
			continue
		}
		var parts []contentPart
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, badRequest("messages[%d].content must be a string or a list of content parts", i)
		}
		out[i].Content = joinParts(parts)
	}
	return out, nil
}

// renderChat renders and tokenizes a conversation as vLLM does: the template
// output is tokenized without adding special tokens unless asked.
func (s *Server) renderChat(body []byte, msgs []chatMessage, addGen *bool, continueFinal, addSpecial bool) ([]uint32, *apiError) {
	return s.renderChatAs(body, msgs, addGen, continueFinal, addSpecial, false)
}

// renderChatAs is renderChat, with template forcing the chat template as
// vLLM's /tokenize and pooling endpoints do (Chat.Template).
func (s *Server) renderChatAs(body []byte, msgs []chatMessage, addGen *bool, continueFinal, addSpecial, template bool) ([]uint32, *apiError) {
	norm, err := normalize(msgs)
	if err != nil {
		return nil, err
	}
	gen := addGen == nil || *addGen
	if gen && continueFinal {
		return nil, badRequest("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	text, rerr := s.tok.RenderChat(Chat{Body: body, Messages: norm, AddGenerationPrompt: gen, ContinueFinal: continueFinal, Template: template})
	if rerr != nil {
		return nil, badRequest("rendering the chat template: %v", rerr)
	}
	return s.tok.Encode(text, addSpecial), nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	body, ok := s.readRequest(w, r, &req)
	if !ok {
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
	prompt, perr := s.renderChat(body, req.Messages, req.AddGenerationPrompt, req.ContinueFinalMessage, req.AddSpecialTokens)
	if perr != nil {
		writeError(w, perr)
		return
	}
	// vLLM's default for chat is whatever context is left.
	maxTokens := s.opts.MaxModelLen - len(prompt)
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		writeError(w, badRequest("max_tokens must be at least 1, got %d", maxTokens))
		return
	}
	if err := s.checkLength(len(prompt), maxTokens); err != nil {
		writeError(w, err)
		return
	}
	out, reason := s.output(maxTokens, req.Seed, req.IgnoreEOS)
	g, err := s.submit(r.Context(), req.Model, salt, prompt, out, reason, kv, req.Stream)
	if err != nil {
		writeError(w, err)
		return
	}
	if g.req.HoldForTransfer {
		s.prefillChat(w, req.Model, g)
		return
	}
	id := requestID("chatcmpl", s.counter.Add(1))
	model := s.modelName(req.Model)
	if req.Stream {
		s.streamChat(w, id, model, g, req.StreamOptions, req.ReturnTokenIDs)
		return
	}
	res, text, ok := s.finish(w, g)
	if !ok {
		return
	}
	choice := chatChoice{Message: &chatOutMessage{Role: "assistant", Content: text, ToolCalls: []any{}}, FinishReason: &res.reason}
	if req.ReturnTokenIDs {
		choice.TokenIDs = res.ids
	}
	writeJSON(w, http.StatusOK, chatResponse{
		ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []chatChoice{choice}, Usage: s.chatUsage(g.prompt, res),
	})
}

// streamChat streams a chat answer. With stream_options.include_usage and
// continuous_usage_stats, every chunk carries the usage so far, as vLLM's
// chat stream does (the role chunk: the prompt and no output); vLLM's
// Anthropic bridge reads the prompt size off that first chunk.
func (s *Server) streamChat(w http.ResponseWriter, id, model string, g *generation, opts *streamOptions, tokenIDs bool) {
	created := time.Now().Unix()
	includeUsage := opts != nil && opts.IncludeUsage
	continuous := includeUsage && opts.ContinuousUsageStats
	resp := func(choices []chatChoice, u *usage) chatResponse {
		return chatResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: choices, Usage: u}
	}
	soFar := func(n int) *usage {
		if !continuous {
			return nil
		}
		return &usage{PromptTokens: g.prompt, CompletionTokens: n, TotalTokens: g.prompt + n, inChunk: true}
	}
	empty := ""
	// vLLM sends the role chunk with the engine's first output, after the
	// prefill, so a client (or a router counting queued prefill) sees no
	// body byte before the first token is ready.
	role := resp([]chatChoice{{Delta: &chatDelta{Role: "assistant", Content: &empty}}}, soFar(0))
	n := 0
	s.stream(newSSE(w), g, includeUsage, role,
		func(text string, tok uint32, finish *string) any {
			n++
			c := chatChoice{Delta: &chatDelta{Content: &text}, FinishReason: finish}
			if tokenIDs {
				c.TokenIDs = []uint32{tok}
			}
			return resp([]chatChoice{c}, soFar(n))
		},
		func(res result) any {
			u := s.chatUsage(g.prompt, res)
			u.inChunk = true
			return resp([]chatChoice{}, u)
		})
}
