package fleet

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestDisaggregatedFleet: the real driver under the plugin host runs one
// vllm-sim shard with the prefill role and one with the decode role (each
// with its NIXL side-channel port), registered with llmgw-role; a router
// serves a streamed completion through the OpenAI SDK, unmodified, in two
// steps: prefilled on the one, decoded on the other, which pulls the
// prompt's blocks over the side channel.
func TestDisaggregatedFleet(t *testing.T) {
	o := options(t)
	o.Shards, o.Routers, o.Roles = 2, 1, []string{"prefill", "decode"}
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	router := f.RouterURLs()[0]
	client := openai.NewClient(option.WithBaseURL(router+"/v1"), option.WithAPIKey(testAPIKey), option.WithMaxRetries(0))
	var headers http.Header
	stream := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel("sim-model"),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt(1))},
		MaxTokens:     openai.Int(5),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			headers = resp.Header
		}
		return resp, err
	}))
	var text strings.Builder
	var usage openai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		for _, c := range ch.Choices {
			text.WriteString(c.Text)
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.Len() == 0 || usage.CompletionTokens != 5 {
		t.Errorf("streamed %q, usage %+v; want 5 tokens of text", text.String(), usage)
	}
	shards := f.Shards()
	prefill, decode := shards[0].ReplicaID, shards[1].ReplicaID
	if headers.Get("X-Llmgw-Routing-Mode") != "disaggregated" || headers.Get("X-Llmgw-Replica") != decode || headers.Get("X-Llmgw-Prefill-Replica") != prefill {
		t.Fatalf("route: mode %q replica %q prefill %q; want disaggregated, %s after %s", headers.Get("X-Llmgw-Routing-Mode"),
			headers.Get("X-Llmgw-Replica"), headers.Get("X-Llmgw-Prefill-Replica"), decode, prefill)
	}
	if got := engineMetric(t, shards[1].URL, "vllm:nixl_bytes_transferred_count"); got != 1 {
		t.Errorf("decode shard made %v pulls; want 1", got)
	}
}

// engineMetric sums one series of an engine's /metrics over its labels.
func engineMetric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := testClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}
