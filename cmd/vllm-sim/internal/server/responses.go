package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvxfer"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/responses"
)

// The Responses API as vLLM serves it for a plain text model
// (vllm/entrypoints/openai/responses/serving.py): the request is converted
// to chat messages (router/responses.ChatBody, the router's own key path)
// and rendered, tokenized and generated as a chat completion, so the KV
// cache and its events see the tokens the router keys.

// responsesExtras are the request fields the answer echoes or the
// generation uses, beyond what router/responses reads.
type responsesExtras struct {
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	Seed              *int64          `json:"seed"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	IgnoreEOS         bool            `json:"ignore_eos"`
	RequestID         *string         `json:"request_id"`
	CacheSalt         json.RawMessage `json:"cache_salt"`
	Metadata          json.RawMessage `json:"metadata"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	Tools             json.RawMessage `json:"tools"`
	MaxToolCalls      json.RawMessage `json:"max_tool_calls"`
	Reasoning         json.RawMessage `json:"reasoning"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	Text              json.RawMessage `json:"text"`
	Truncation        json.RawMessage `json:"truncation"`
	User              json.RawMessage `json:"user"`
}

// responsesCall is one /v1/responses request on its way through.
type responsesCall struct {
	req    *responses.Request
	extras responsesExtras
	id     string
	model  string
	salt   string
	msgs   []json.RawMessage // the chat messages rendered, kept for a successor
	prompt []uint32
	max    int
}

func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) {
	c, aerr := s.readResponsesCall(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if c.req.Background {
		s.startBackground(w, c)
		return
	}
	g, err := s.generate(r.Context(), c)
	if err != nil {
		writeError(w, err)
		return
	}
	s.store.putMessages(c)
	if c.req.Stream {
		s.streamResponse(w, c, g)
		return
	}
	res, text, ok := s.finish(w, g)
	if !ok {
		return
	}
	obj := s.responseObject(c, g.prompt, &res, text)
	s.store.complete(c, obj)
	writeJSON(w, http.StatusOK, obj)
}

// generate submits c's prompt with the output the simulated model gives.
func (s *Server) generate(ctx context.Context, c *responsesCall) (*generation, error) {
	out, reason := s.output(c.max, c.extras.Seed, c.extras.IgnoreEOS)
	return s.submit(ctx, c.req.Model, c.salt, c.prompt, out, reason, kvxfer.Params{}, c.req.Stream)
}

// readResponsesCall parses and checks a request in vLLM's order: the body
// (pydantic's validation), the model, background without a store, the
// previous response, then the prompt and its length.
func (s *Server) readResponsesCall(r *http.Request) (*responsesCall, *apiError) {
	var extras responsesExtras
	body, aerr := decodeBody(r, &extras)
	if aerr != nil {
		return nil, aerr
	}
	req, err := responses.Parse(body)
	if err != nil {
		return nil, badRequest("%s", openaiMessage(err))
	}
	if aerr := s.checkModel(req.Model); aerr != nil {
		return nil, aerr
	}
	if req.Store && !s.store.enabled && req.Background {
		return nil, invalidRequest(http.StatusBadRequest, "background", "This vLLM engine does not support `store=True` and therefore does not support the background mode. To enable these features, set the environment variable `VLLM_ENABLE_RESPONSES_API_STORE=1` when launching the vLLM server.")
	}
	if req.Background && req.Stream {
		return nil, badRequest("vllm-sim does not model background streaming")
	}
	if !s.store.enabled {
		req.Store = false // vLLM ignores store without its store
	}
	c := &responsesCall{req: req, extras: extras, model: s.modelName(req.Model)}
	c.id = "resp_" + s.uuid()
	if extras.RequestID != nil {
		c.id = *extras.RequestID
	}
	// responses.Parse checked the salt as vLLM's ResponsesRequest does (a
	// non-empty string), without the chat path's length and character rules.
	_ = json.Unmarshal(extras.CacheSalt, &c.salt)
	if aerr := s.renderResponse(c); aerr != nil {
		return nil, aerr
	}
	return c, nil
}

// openaiMessage is a parse error's text without the ErrBadRequest prefix.
func openaiMessage(err error) string {
	return strings.TrimPrefix(err.Error(), openai.ErrBadRequest.Error()+": ")
}

// renderResponse builds c's conversation (a stored predecessor's first),
// renders and tokenizes it, and decides the output budget as vLLM's
// get_max_tokens does: what the context leaves, capped by
// max_output_tokens.
func (s *Server) renderResponse(c *responsesCall) *apiError {
	chatBody, err := c.req.ChatBody()
	if err != nil {
		return badRequest("%s", openaiMessage(err))
	}
	if id := c.req.PreviousResponseID; id != "" {
		prev, ok := s.store.get(id)
		if !ok {
			return notFoundResponse(id)
		}
		if chatBody, err = withHistory(chatBody, c.req.Instructions != "", prev); err != nil {
			return badRequest("%v", err)
		}
	}
	var chat chatRequest
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(chatBody, &chat); err != nil {
		return badRequest("converting the request: %v", err)
	}
	if err := json.Unmarshal(chatBody, &raw); err != nil {
		return badRequest("converting the request: %v", err)
	}
	c.msgs = raw.Messages
	prompt, aerr := s.renderChat(chatBody, chat.Messages, chat.AddGenerationPrompt, chat.ContinueFinalMessage, false)
	if aerr != nil {
		return aerr
	}
	if len(prompt) >= s.opts.MaxModelLen {
		return invalidRequest(http.StatusBadRequest, "input", fmt.Sprintf("The engine prompt length %d exceeds the max_model_len %d. Please reduce prompt.", len(prompt), s.opts.MaxModelLen))
	}
	c.prompt, c.max = prompt, s.opts.MaxModelLen-len(prompt)
	if n := c.extras.MaxOutputTokens; n != nil && c.max > *n {
		c.max = *n
	}
	if c.max < 1 {
		return badRequest("max_tokens must be at least 1, got %d.", c.max)
	}
	return nil
}

// invalidRequest is an error vLLM's create_error_response makes with a
// type and a param.
func invalidRequest(status int, param, msg string) *apiError {
	return &apiError{status: status, typ: "invalid_request_error", msg: msg, param: param}
}

func notFoundResponse(id string) *apiError {
	return invalidRequest(http.StatusNotFound, "response_id", fmt.Sprintf("Response with id '%s' not found.", id))
}

// uuid is a 32-hex-digit id, the shape of vLLM's random_uuid().
func (s *Server) uuid() string {
	return fmt.Sprintf("%016x%016x", uint64(time.Now().UnixNano()), s.counter.Add(1))
}
