package server

import "encoding/json"

// The pooling API's request and response shapes, as vLLM serves them
// (vllm/entrypoints/pooling/{embed,classify,pooling,scoring}/protocol.py).
// Only the fields the simulator acts on are decoded.

// poolingRequest is the body of /v1/embeddings, /pooling and /classify:
// a completion-style input, or a chat conversation in messages (or, for
// embeddings, in input).
type poolingRequest struct {
	Model            string          `json:"model"`
	Input            json.RawMessage `json:"input"`
	Messages         json.RawMessage `json:"messages"`
	Task             string          `json:"task"` // /pooling only
	EncodingFormat   string          `json:"encoding_format"`
	Dimensions       *int            `json:"dimensions"`
	AddSpecialTokens *bool           `json:"add_special_tokens"`
	// AddGenerationPrompt defaults to false for pooling chat requests.
	AddGenerationPrompt  *bool           `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message"`
	CacheSalt            json.RawMessage `json:"cache_salt"`
}

// scoreRequest is the body of /score and /rerank: a query side and a
// document side under any of the names vLLM accepts.
type scoreRequest struct {
	Model     string          `json:"model"`
	Queries   json.RawMessage `json:"queries"`
	Documents json.RawMessage `json:"documents"`
	Items     json.RawMessage `json:"items"`
	Data1     json.RawMessage `json:"data_1"`
	Data2     json.RawMessage `json:"data_2"`
	Text1     json.RawMessage `json:"text_1"`
	Text2     json.RawMessage `json:"text_2"`
	Query     json.RawMessage `json:"query"` // rerank
	TopN      int             `json:"top_n"` // rerank; 0: all
	CacheSalt json.RawMessage `json:"cache_salt"`
}

func (r *poolingRequest) model() string { return r.Model }
func (r *scoreRequest) model() string   { return r.Model }

// poolingUsage is vLLM's UsageInfo for a pooling answer: prompt tokens
// only.
type poolingUsage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
}

type embeddingData struct {
	Index     int    `json:"index"`
	Object    string `json:"object"`
	Embedding any    `json:"embedding"` // []float64, or a base64 string
}

type poolingData struct {
	Index  int    `json:"index"`
	Object string `json:"object"`
	Data   any    `json:"data"`
}

type classifyData struct {
	Index      int       `json:"index"`
	Label      string    `json:"label"`
	Probs      []float64 `json:"probs"`
	NumClasses int       `json:"num_classes"`
}

type scoreData struct {
	Index  int     `json:"index"`
	Object string  `json:"object"`
	Score  float64 `json:"score"`
}

// listResponse is the envelope of every pooling answer but rerank's.
type listResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Data    any          `json:"data"`
	Usage   poolingUsage `json:"usage"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int            `json:"index"`
	Document       rerankDocument `json:"document"`
	RelevanceScore float64        `json:"relevance_score"`
}

type rerankUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Usage   rerankUsage    `json:"usage"`
	Results []rerankResult `json:"results"`
}
