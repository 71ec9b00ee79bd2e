package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/router/config"
)

// TestOpenAIClient drives the router with OpenAI's own Go client: chat,
// streaming chat and completions, and an error the client must parse.
func TestOpenAIClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	c := routerConfig("")
	for _, id := range []string{"a/main", "b/main"} {
		s := startSim(t, "--sim-latency=false")
		c.Replicas = append(c.Replicas, config.StaticReplica{ID: id, Model: model, Address: s.addr, BlockSize: 16})
	}
	r := startRouter(t, c)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := openai.NewClient(option.WithBaseURL("http://"+r.Addr()+"/v1"), option.WithAPIKey("unused"),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
	ctx := context.Background()

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:     model,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say something")},
		MaxTokens: openai.Int(5),
	})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if len(chat.Choices) != 1 || chat.Choices[0].Message.Content == "" || chat.Usage.CompletionTokens != 5 {
		t.Errorf("chat answer %+v", chat)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:     model,
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream something")},
		MaxTokens: openai.Int(6),
	})
	chunks := 0
	var text strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			chunks++
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if chunks < 6 || text.Len() == 0 {
		t.Errorf("stream gave %d content chunks (%q); want >= 6", chunks, text.String())
	}

	comp, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:     openai.CompletionNewParamsModel(model),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon a time")},
		MaxTokens: openai.Int(3),
	})
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	if len(comp.Choices) != 1 || comp.Usage.CompletionTokens != 3 {
		t.Errorf("completion answer %+v", comp)
	}

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "no-such-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, "does not exist") {
		t.Errorf("unknown model: %v; want a parsed 404 error", err)
	}
}
