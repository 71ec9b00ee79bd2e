package sdk_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// goClient is OpenAI's Go client on router r, as an application sets it
// up: a base URL, a key, no retries.
func goClient(t *testing.T, r *router) openai.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return openai.NewClient(option.WithBaseURL(r.base()+"/v1"), option.WithAPIKey(apiKey),
		option.WithHTTPClient(&http.Client{Transport: tr}), option.WithMaxRetries(0))
}

// replyOf is what the checks assert of a Responses answer.
func replyOf(via string, r *responses.Response) reply {
	out := reply{Via: via, ID: r.ID, Status: string(r.Status), Text: r.OutputText(),
		InputTokens: int(r.Usage.InputTokens), OutputTokens: int(r.Usage.OutputTokens)}
	if r.PreviousResponseID != "" {
		out.PreviousResponseID = &r.PreviousResponseID
	}
	return out
}

// testOpenAIGo drives the Responses API with OpenAI's Go client: create,
// stream, and a previous_response_id chain across both routers.
func testOpenAIGo(t *testing.T, f *fleet, have served) {
	if why := have.missingOf([]endpoint{postResponses}); why != "" {
		t.Skip(why)
	}
	a, b := goClient(t, f.a), goClient(t, f.b)
	ctx := context.Background()
	params := func(input, prev string) responses.ResponseNewParams {
		p := responses.ResponseNewParams{
			Model:           chatModel,
			Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
			MaxOutputTokens: openai.Int(12),
		}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		return p
	}

	t.Run("create", func(t *testing.T) {
		r, err := a.Responses.New(ctx, params("Name three colours of the rainbow.", ""))
		if err != nil {
			t.Fatal(err)
		}
		replyOf("A", r).isResponse(t, "response")
	})

	t.Run("stream", func(t *testing.T) {
		stream := a.Responses.NewStreaming(ctx, params("Count from one to five in words.", ""))
		var text string
		var final *responses.Response
		for stream.Next() {
			switch ev := stream.Current(); ev.Type {
			case "response.output_text.delta":
				text += ev.Delta
			case "response.completed", "response.incomplete":
				final = &ev.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if final == nil {
			t.Fatal("the stream ended without response.completed or response.incomplete")
		}
		replyOf("A", final).isResponse(t, "streamed response")
		if text == "" || text != final.OutputText() {
			t.Errorf("streamed %q; the final response says %q", text, final.OutputText())
		}
	})

	t.Run("chain", func(t *testing.T) {
		var turns []reply
		prev := ""
		for i, input := range []string{"My name is Ada and my favourite colour is teal.", "What is my favourite colour?", "And what is my name?"} {
			via, c := "A", a
			if i == 1 {
				via, c = "B", b
			}
			r, err := c.Responses.New(ctx, params(input, prev))
			if err != nil {
				t.Fatalf("turn %d via %s: %v", i+1, via, err)
			}
			turns = append(turns, replyOf(via, r))
			prev = r.ID
		}
		chainHolds(t, turns)
	})
}
