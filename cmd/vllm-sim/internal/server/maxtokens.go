package server

import (
	"encoding/json"
	"fmt"
)

// optionalInt is an integer request field that tells an absent key from
// an explicit null, which vLLM's completions read differently.
type optionalInt struct {
	Set   bool // the key was present, with a number or null
	Value *int // nil for null
}

// UnmarshalJSON is called for a present key, null included.
func (o *optionalInt) UnmarshalJSON(b []byte) error {
	o.Set, o.Value = true, nil
	if string(b) == "null" {
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("max_tokens must be an integer or null, got %s", b)
	}
	o.Value = &v
	return nil
}

// completionMaxTokens is a completion's max_tokens for a prompt of
// promptLen tokens, as vLLM's get_max_tokens takes it: the request's
// number; OpenAI's legacy 16 when absent (CompletionRequest's default);
// and when null, no limit but the context, max_model_len less the prompt
// (0 when the prompt fills it, which the caller refuses as vLLM's
// SamplingParams does).
func (s *Server) completionMaxTokens(mt optionalInt, promptLen int) (int, *apiError) {
	switch {
	case !mt.Set:
		return 16, nil
	case mt.Value != nil:
		return *mt.Value, nil
	case promptLen > s.opts.MaxModelLen:
		return 0, badRequest("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			s.opts.MaxModelLen, promptLen)
	}
	return s.opts.MaxModelLen - promptLen, nil
}
