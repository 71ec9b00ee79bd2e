package responses

import (
	"encoding/json"
	"strings"
	"testing"
)

// vllmResponse is a ResponsesResponse as vLLM's responses_full_generator
// serialises it for a plain text model (ResponsesResponse.from_request in
// vllm/entrypoints/openai/responses/protocol.py at
// 010a69cea9ac46d2953fa673c3b814f922d1b194).
const vllmResponse = `{"id":"resp_abc","created_at":1700000000,"incomplete_details":null,"instructions":null,"metadata":null,"model":"m","object":"response",` +
	`"output":[{"id":"msg_1","content":[{"annotations":[],"text":"hi there","type":"output_text","logprobs":null}],"role":"assistant","status":"completed","type":"message"}],` +
	`"parallel_tool_calls":true,"temperature":1.0,"tool_choice":"auto","tools":[],"top_p":1.0,"background":false,"max_output_tokens":100,"max_tool_calls":null,` +
	`"previous_response_id":null,"prompt":null,"reasoning":null,"service_tier":"auto","status":"completed","text":null,"top_logprobs":null,"truncation":"disabled",` +
	`"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":16,"input_tokens_per_turn":[],"cached_tokens_per_turn":[]},"output_tokens":3,` +
	`"output_tokens_details":{"reasoning_tokens":0,"tool_output_tokens":0,"output_tokens_per_turn":[],"tool_output_tokens_per_turn":[]},"total_tokens":23},"user":null}`

func TestReadResult(t *testing.T) {
	t.Parallel()
	res, err := ReadResult([]byte(vllmResponse))
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != "resp_abc" || res.Status != "completed" || res.InputTokens != 20 || res.OutputTokens != 3 || res.CachedTokens != 16 {
		t.Fatalf("ReadResult = %+v", res)
	}
	if len(res.Output) != 1 || !strings.Contains(string(res.Output[0]), `"hi there"`) {
		t.Fatalf("Output = %s", res.Output)
	}
	if string(res.Body) != vllmResponse {
		t.Fatalf("Body is not the response object")
	}
}

func TestReadResultRefuses(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `[]`, `{"status":"completed"}`, `{"id":""}`, `{"id":"r","usage":"x"}`} {
		if _, err := ReadResult([]byte(body)); err == nil {
			t.Errorf("ReadResult(%q) succeeded, want an error", body)
		}
	}
}

// withStatus is vllmResponse with the response's status replaced.
func withStatus(status string) string {
	return strings.Replace(vllmResponse, `"service_tier":"auto","status":"completed"`, `"service_tier":"auto","status":"`+status+`"`, 1)
}

func TestReadStreamEvent(t *testing.T) {
	t.Parallel()
	queued, incomplete := withStatus("in_progress"), withStatus("incomplete")
	cases := []struct {
		name, data string
		final      bool
		status     string
	}{
		{"created", `{"response":` + queued + `,"sequence_number":0,"type":"response.created"}`, false, ""},
		{"in progress", `{"response":` + queued + `,"sequence_number":1,"type":"response.in_progress"}`, false, ""},
		{"a delta", `{"content_index":0,"delta":" the","item_id":"u","logprobs":[],"output_index":0,"sequence_number":4,"type":"response.output_text.delta"}`, false, ""},
		{"completed", `{"response":` + vllmResponse + `,"sequence_number":9,"type":"response.completed"}`, true, "completed"},
		{"vLLM's completed event for a cut answer", `{"response":` + incomplete + `,"sequence_number":9,"type":"response.completed"}`, true, "incomplete"},
		{"OpenAI's incomplete event", `{"type":"response.incomplete","sequence_number":9,"response":` + incomplete + `}`, true, "incomplete"},
		{"failed", `{"type":"response.failed","sequence_number":3,"response":` + withStatus("failed") + `}`, true, "failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, final, err := ReadStreamEvent([]byte(tc.data))
			if err != nil || final != tc.final {
				t.Fatalf("ReadStreamEvent = %v, %v, want final %v", final, err, tc.final)
			}
			if !final {
				if res != nil {
					t.Fatalf("a non-final event gave %+v", res)
				}
				return
			}
			if res.ID != "resp_abc" || res.Status != tc.status || res.InputTokens != 20 {
				t.Fatalf("result %s, status %s, %d input tokens; want resp_abc, %s, 20", res.ID, res.Status, res.InputTokens, tc.status)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(res.Body, &obj); err != nil || string(obj["id"]) != `"resp_abc"` {
				t.Fatalf("Body %s is not the response object (%v)", res.Body, err)
			}
		})
	}
}

func TestReadStreamEventRefuses(t *testing.T) {
	t.Parallel()
	for _, data := range []string{`not json`, `{"type":"response.completed"}`, `{"type":"response.completed","response":{"id":""}}`} {
		if _, final, err := ReadStreamEvent([]byte(data)); err == nil || final {
			t.Errorf("ReadStreamEvent(%q) = final %v, err %v; want an error", data, final, err)
		}
	}
}
