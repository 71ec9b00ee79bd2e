package openai

import (
	"encoding/json"
	"strings"
)

// poolingFields are the request fields of vLLM's pooling API
// (vllm/entrypoints/pooling/*/protocol.py) that routing reads: the input
// of /v1/embeddings, /pooling and /classify, and the sides of /score and
// /rerank under each name vLLM accepts.
type poolingFields struct {
	Input     json.RawMessage `json:"input"`
	Query     json.RawMessage `json:"query"`
	Queries   json.RawMessage `json:"queries"`
	Documents json.RawMessage `json:"documents"`
	Items     json.RawMessage `json:"items"`
	Data1     json.RawMessage `json:"data_1"`
	Data2     json.RawMessage `json:"data_2"`
	Text1     json.RawMessage `json:"text_1"`
	Text2     json.RawMessage `json:"text_2"`
}

func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// parsePoolingInput reads the prompt of an embeddings, pooling or classify
// request: a conversation in messages (or, as vLLM's embeddings accept, in
// input), else input in the four completion forms, the first prompt of a
// list deciding the route. Special tokens are added by default to a
// completion-form input and not to a conversation, as vLLM's pooling
// requests do. A conversation is keyed by its messages' text joined by a
// newline: the router renders chat templates for chat completions only.
func parsePoolingInput(raw *rawRequest, r *Request) error {
	r.Stream = false // a pooling answer is never streamed
	if !present(raw.Messages) && isConversation(raw.Input) {
		raw.Messages = raw.Input
	}
	if present(raw.Messages) {
		msgs, err := parseMessages(raw.Messages)
		if err != nil {
			return err
		}
		r.Messages = msgs
		texts := make([]string, len(msgs))
		for i, m := range msgs {
			texts[i] = m.Content
		}
		r.Prompt = strings.Join(texts, "\n")
		r.AddSpecialTokens = raw.AddSpecialTokens != nil && *raw.AddSpecialTokens
		return nil
	}
	if !present(raw.Input) {
		return bad("input is required")
	}
	if err := parsePrompt(raw.Input, r); err != nil {
		return bad("input must be a string, a list of strings, a list of token ids, or a list of token-id lists")
	}
	r.AddSpecialTokens = raw.AddSpecialTokens == nil || *raw.AddSpecialTokens
	return nil
}

// isConversation reports whether raw is a list of chat messages (objects
// with a string role), vLLM's test for a conversation in input.
func isConversation(raw json.RawMessage) bool {
	var items []struct {
		Role json.RawMessage `json:"role"`
	}
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return false
	}
	var role string
	return json.Unmarshal(items[0].Role, &role) == nil
}

// parseScore reads the prompt of a score or rerank request: its first
// query text, which a bi-encoder embeds first and a cross-encoder's first
// pair starts with. Both sides must be present.
func parseScore(raw *rawRequest, r *Request) error {
	r.Stream = false
	first, second := raw.Query, raw.Documents
	names := "query and documents"
	if r.Kind == Score {
		first, second, names = scoreSides(raw)
	}
	if !present(first) || !present(second) {
		return bad("%s are required", names)
	}
	var one string
	if json.Unmarshal(first, &one) == nil {
		r.Prompt = one
	} else {
		var many []string
		if json.Unmarshal(first, &many) != nil || len(many) == 0 {
			return bad("%s: the query side must be a string or a non-empty list of strings", names)
		}
		r.Prompt = many[0]
	}
	r.AddSpecialTokens = true
	return nil
}

// scoreSides picks a score request's sides under the names vLLM's
// ScoreRequest union accepts, in its order.
func scoreSides(raw *rawRequest) (first, second json.RawMessage, names string) {
	switch {
	case present(raw.Queries) && present(raw.Documents):
		return raw.Queries, raw.Documents, "queries and documents"
	case present(raw.Queries) && present(raw.Items):
		return raw.Queries, raw.Items, "queries and items"
	case present(raw.Data1):
		return raw.Data1, raw.Data2, "data_1 and data_2"
	case present(raw.Text1):
		return raw.Text1, raw.Text2, "text_1 and text_2"
	}
	return raw.Queries, raw.Documents, "queries and documents (or data_1 and data_2, text_1 and text_2)"
}
