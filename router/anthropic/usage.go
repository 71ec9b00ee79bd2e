package anthropic

import "encoding/json"

// usage is an Anthropic usage object. vLLM's pinned bridge fills
// input_tokens and output_tokens; Anthropic's API, and later vLLM, also
// report prompt-cache reads and writes, which input_tokens then leaves out.
type usage struct {
	InputTokens   *int64 `json:"input_tokens"`
	OutputTokens  *int64 `json:"output_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
}

// Usage reads the token counts from a Messages answer's JSON or from one
// SSE event's data: a message (or message_start's message) and a
// message_delta carry a usage object; message_start reports the input,
// message_delta the input and the output. input is the whole prompt
// (input_tokens plus cache reads and writes, as OpenAI's prompt_tokens
// counts it), cached the cache reads. ok is false when data holds no usage.
func Usage(data []byte) (input, output, cached int64, ok bool) {
	var ev struct {
		Type    string `json:"type"`
		Usage   *usage `json:"usage"`
		Message *struct {
			Usage *usage `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return 0, 0, 0, false
	}
	u := ev.Usage
	if ev.Type == "message_start" && ev.Message != nil {
		u = ev.Message.Usage
	}
	if u == nil || (u.InputTokens == nil && u.OutputTokens == nil) {
		return 0, 0, 0, false
	}
	for _, n := range []*int64{u.InputTokens, u.CacheRead, u.CacheCreation} {
		if n != nil {
			input += *n
		}
	}
	if u.OutputTokens != nil {
		output = *u.OutputTokens
	}
	if u.CacheRead != nil {
		cached = *u.CacheRead
	}
	return input, output, cached, true
}
