package sdk_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// check is one call (or conversation) a Node script makes, the endpoints
// it needs, and what its detail must show.
type check struct {
	script, name string
	needs        []endpoint
	assert       func(t *testing.T, detail json.RawMessage)
}

// nodeChecks are every Node SDK check, in the order each script runs them.
var nodeChecks = []check{
	{"openai.mjs", "models", []endpoint{getModels}, assertModels},
	{"openai.mjs", "chat", []endpoint{postChat}, assertReply},
	{"openai.mjs", "chat.stream", []endpoint{postChat}, assertStreamed},
	{"openai.mjs", "responses", []endpoint{postResponses}, assertResponse},
	{"openai.mjs", "responses.stream", []endpoint{postResponses}, assertResponseStream},
	{"openai.mjs", "responses.chain", []endpoint{postResponses}, assertChain},
	{"openai.mjs", "responses.retrieve_delete", []endpoint{postResponses, getResponse, deleteResponse}, assertRetrieveDelete},
	{"ai-sdk-openai.mjs", "generate", []endpoint{postResponses}, assertReply},
	{"ai-sdk-openai.mjs", "stream", []endpoint{postResponses}, assertStreamed},
	{"ai-sdk-openai.mjs", "embed", []endpoint{postEmbeddings}, assertEmbedding},
	{"ai-sdk-compatible.mjs", "chat", []endpoint{postChat}, assertReply},
	{"ai-sdk-compatible.mjs", "chat.stream", []endpoint{postChat}, assertStreamed},
	{"anthropic.mjs", "messages", []endpoint{postMessages}, assertMessage},
	{"anthropic.mjs", "messages.stream", []endpoint{postMessages}, assertMessageStream},
	{"anthropic.mjs", "messages.tools", []endpoint{postMessages}, assertToolRoundTrip},
	{"anthropic.mjs", "messages.count_tokens", []endpoint{postMessages, postCountTokens}, assertCountTokens},
	{"langchain.mjs", "chat", []endpoint{postChat}, assertReply},
	{"langchain.mjs", "responses", []endpoint{postResponses}, assertReply},
}

// reply is what the scripts report of one answer, whichever the API.
type reply struct {
	Via                string  `json:"via"`
	ID                 string  `json:"id"`
	Type               string  `json:"type"`
	Role               string  `json:"role"`
	Status             string  `json:"status"`
	StopReason         string  `json:"stop_reason"`
	PreviousResponseID *string `json:"previous_response_id"`
	Text               string  `json:"text"`
	InputTokens        int     `json:"input_tokens"`
	OutputTokens       int     `json:"output_tokens"`
	Chunks             int     `json:"chunks"`
	Deltas             int     `json:"deltas"`
}

// answered checks what every answer has: an id, text and both token
// counts.
func (r reply) answered(t *testing.T, what string) {
	t.Helper()
	if r.ID == "" || r.Text == "" || r.InputTokens <= 0 || r.OutputTokens <= 0 {
		t.Errorf("%s: %+v; want an id, text and input and output token counts", what, r)
	}
}

// isResponse checks what vLLM's ResponsesResponse.from_request sets: the
// request's id ("resp_..."), and status completed, or incomplete when
// max_output_tokens cut the answer.
func (r reply) isResponse(t *testing.T, what string) {
	t.Helper()
	r.answered(t, what)
	if !strings.HasPrefix(r.ID, "resp_") || (r.Status != "completed" && r.Status != "incomplete") {
		t.Errorf("%s: id %q, status %q; want resp_... and completed or incomplete", what, r.ID, r.Status)
	}
}

func decode[T any](t *testing.T, detail json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(detail, &v); err != nil {
		t.Fatalf("detail %s: %v", detail, err)
	}
	return v
}

func assertModels(t *testing.T, d json.RawMessage) {
	if got := decode[struct{ IDs []string }](t, d); !slices.Contains(got.IDs, chatModel) {
		t.Errorf("models %v; want %s among them", got.IDs, chatModel)
	}
}

func assertReply(t *testing.T, d json.RawMessage) { decode[reply](t, d).answered(t, "answer") }

func assertStreamed(t *testing.T, d json.RawMessage) {
	r := decode[reply](t, d)
	r.answered(t, "streamed answer")
	if r.Chunks < 1 {
		t.Errorf("streamed answer came in %d text chunks; want at least one", r.Chunks)
	}
}

func assertResponse(t *testing.T, d json.RawMessage) { decode[reply](t, d).isResponse(t, "response") }

func assertResponseStream(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		Text   string
		Deltas int
		Types  []string
		Final  *reply
	}](t, d)
	for _, want := range []string{"response.created", "response.output_text.delta"} {
		if !slices.Contains(got.Types, want) {
			t.Errorf("stream events %v; want %s among them", got.Types, want)
		}
	}
	if got.Final == nil {
		t.Fatalf("stream events %v; want a response.completed (or .incomplete) at the end", got.Types)
	}
	got.Final.isResponse(t, "streamed response")
	if got.Deltas < 1 || got.Text != got.Final.Text {
		t.Errorf("streamed %d deltas %q; the final response says %q", got.Deltas, got.Text, got.Final.Text)
	}
}

func assertChain(t *testing.T, d json.RawMessage) {
	chainHolds(t, decode[struct{ Turns []reply }](t, d).Turns)
}

// chainHolds checks a previous_response_id chain: each turn names the one
// before, and sees it, since its prompt holds the earlier turns' prompt
// and answer: more input tokens than both together.
func chainHolds(t *testing.T, turns []reply) {
	t.Helper()
	if len(turns) != 3 {
		t.Fatalf("chain of %d turns; want 3", len(turns))
	}
	for i, turn := range turns {
		turn.isResponse(t, "turn "+turn.Via)
		if i == 0 {
			continue
		}
		prev := turns[i-1]
		if turn.PreviousResponseID == nil || *turn.PreviousResponseID != prev.ID || turn.ID == prev.ID {
			t.Errorf("turn %d (via %s) is %s continuing %v; want a new id continuing %s", i+1, turn.Via, turn.ID, turn.PreviousResponseID, prev.ID)
		}
		if turn.InputTokens <= prev.InputTokens+prev.OutputTokens {
			t.Errorf("turn %d (via %s) has %d input tokens; turn %d had %d in and %d out: the chain's history is missing",
				i+1, turn.Via, turn.InputTokens, i, prev.InputTokens, prev.OutputTokens)
		}
	}
}

func assertRetrieveDelete(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		Created     reply
		RetrievedB  reply `json:"retrieved_b"`
		RetrievedA  reply `json:"retrieved_a"`
		AfterDelete int   `json:"after_delete_status"`
	}](t, d)
	got.Created.isResponse(t, "created")
	for _, r := range []reply{got.RetrievedB, got.RetrievedA} {
		if r.ID != got.Created.ID || r.Text != got.Created.Text || r.OutputTokens != got.Created.OutputTokens {
			t.Errorf("retrieved via %s: %+v; want the created response %+v", r.Via, r, got.Created)
		}
	}
	if got.AfterDelete != 404 {
		t.Errorf("retrieve after delete: status %d; want 404", got.AfterDelete)
	}
}

func assertEmbedding(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		Dimensions, Tokens int
		Finite             bool
	}](t, d)
	if got.Dimensions <= 0 || got.Tokens <= 0 || !got.Finite {
		t.Errorf("embedding %+v; want finite dimensions and a token count", got)
	}
}

// stopReasons are the stop reasons vLLM's Messages API maps chat finish
// reasons to (AnthropicServingMessages.stop_reason_map): stop, length and
// tool_calls.
var stopReasons = []string{"end_turn", "max_tokens", "tool_use"}

// isMessage checks the shape of an Anthropic message answer.
func (r reply) isMessage(t *testing.T, what string) {
	t.Helper()
	r.answered(t, what)
	if r.Type != "message" || r.Role != "assistant" || !slices.Contains(stopReasons, r.StopReason) {
		t.Errorf("%s: type %q, role %q, stop_reason %q; want an assistant message stopped for one of %v", what, r.Type, r.Role, r.StopReason, stopReasons)
	}
}

func assertMessage(t *testing.T, d json.RawMessage) { decode[reply](t, d).isMessage(t, "message") }

func assertMessageStream(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		Text   string
		Deltas int
		Final  reply
	}](t, d)
	// vLLM dumps message_start's message with exclude_unset, so it has no
	// type or role (docs/VLLM_PARITY.md): the SDK's final message has
	// neither, and everything the deltas and message_delta carry.
	got.Final.answered(t, "streamed message")
	if !slices.Contains(stopReasons, got.Final.StopReason) || got.Final.Type != "" && got.Final.Type != "message" {
		t.Errorf("streamed message: type %q, stop_reason %q; want a message stopped for one of %v", got.Final.Type, got.Final.StopReason, stopReasons)
	}
	if got.Deltas < 1 || got.Text != got.Final.Text {
		t.Errorf("streamed %d deltas %q; the final message says %q", got.Deltas, got.Text, got.Final.Text)
	}
}

// assertToolRoundTrip: the second request's prompt holds the first's
// question plus the tool call and its result, so it is longer.
func assertToolRoundTrip(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		First           reply
		Second          reply
		ModelCalledTool bool `json:"model_called_tool"`
	}](t, d)
	// The first answer may hold a tool_use block and no text.
	if got.First.ID == "" || got.First.InputTokens <= 0 || got.First.Type != "message" || !slices.Contains(stopReasons, got.First.StopReason) {
		t.Errorf("tool request answered %+v; want a message", got.First)
	}
	got.Second.isMessage(t, "answer to the tool result")
	if got.Second.InputTokens <= got.First.InputTokens {
		t.Errorf("with the tool call and result the prompt has %d tokens, without %d: they were not rendered",
			got.Second.InputTokens, got.First.InputTokens)
	}
	t.Logf("the model called the tool itself: %v", got.ModelCalledTool)
}

func assertCountTokens(t *testing.T, d json.RawMessage) {
	got := decode[struct {
		Count             int
		CreateInputTokens int `json:"create_input_tokens"`
	}](t, d)
	if got.Count <= 0 || got.Count != got.CreateInputTokens {
		t.Errorf("count_tokens says %d; messages.create charged %d input tokens for the same messages", got.Count, got.CreateInputTokens)
	}
}
