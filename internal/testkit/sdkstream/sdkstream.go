// Package sdkstream sends streamed completions through the OpenAI Go SDK,
// unmodified, for tests that check what a real client sees of a route:
// the text, the usage chunk and the response headers the router set.
//
// It is test support: only _test.go files import it.
package sdkstream

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Result is what the client got from one stream.
type Result struct {
	Text    string
	Usage   openai.CompletionUsage
	Headers http.Header
}

// Completion streams a completion of prompt token ids from model, at most
// maxTokens long and with ignore_eos (vLLM's extension, so the answer runs
// to its length on vllm-sim as on an engine), and fails t if the stream
// ends with an error.
func Completion(t testing.TB, client openai.Client, model string, prompt []int64, maxTokens int64) Result {
	t.Helper()
	var res Result
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel(model),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: prompt},
		MaxTokens:     openai.Int(maxTokens),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithJSONSet("ignore_eos", true), option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			res.Headers = resp.Header
		}
		return resp, err
	}))
	var text strings.Builder
	for stream.Next() {
		ch := stream.Current()
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
		if ch.Usage.TotalTokens > 0 {
			res.Usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	res.Text = text.String()
	return res
}
