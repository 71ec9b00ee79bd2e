package responses

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Result is what the router keeps from an engine's answer.
type Result struct {
	ID                                      string
	Status                                  string
	Output                                  []json.RawMessage
	InputTokens, OutputTokens, CachedTokens int64
	Body                                    []byte // the response object's JSON
}

// ReadResult reads a non-streamed answer: vLLM's ResponsesResponse.
func ReadResult(body []byte) (*Result, error) {
	var r struct {
		ID     *string           `json:"id"`
		Object string            `json:"object"`
		Status string            `json:"status"`
		Output []json.RawMessage `json:"output"`
		Usage  *struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			InputTokensDetails *struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("responses: reading a response object: %w", err)
	}
	if r.ID == nil || *r.ID == "" {
		return nil, errors.New("responses: the response object has no id")
	}
	res := &Result{ID: *r.ID, Status: r.Status, Output: r.Output, Body: body}
	if u := r.Usage; u != nil {
		res.InputTokens, res.OutputTokens = u.InputTokens, u.OutputTokens
		if u.InputTokensDetails != nil {
			res.CachedTokens = u.InputTokensDetails.CachedTokens
		}
	}
	return res, nil
}

// finalEvents are the stream events that carry the finished response.
// vLLM's simple (non-Harmony) path ends every stream with
// response.completed, whatever the status; OpenAI ends an incomplete or
// failed one with its own event, so those are read too.
var finalEvents = map[string]bool{
	"response.completed":  true,
	"response.incomplete": true,
	"response.failed":     true,
}

// ReadStreamEvent reads one SSE event's data. An event that carries the
// final response gives its Result and true; any other event gives
// (nil, false, nil); data that is not a JSON event is an error.
func ReadStreamEvent(data []byte) (*Result, bool, error) {
	var ev struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return nil, false, fmt.Errorf("responses: reading a stream event: %w", err)
	}
	if !finalEvents[ev.Type] {
		return nil, false, nil
	}
	if isNull(ev.Response) {
		return nil, false, fmt.Errorf("responses: %s event without a response", ev.Type)
	}
	res, err := ReadResult(append([]byte(nil), ev.Response...))
	if err != nil {
		return nil, false, err
	}
	return res, true, nil
}
