package harmony

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Options are what the request does not say about its rendering.
type Options struct {
	// Date is the conversation start date the engine writes in the system
	// message, YYYY-MM-DD: its local date when the request arrives, or its
	// VLLM_SYSTEM_START_DATE.
	Date string
	// SystemInstructions mirrors VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS:
	// a leading system message extends the model identity instead of
	// becoming the developer message's instructions.
	SystemInstructions bool
}

// chatRequest holds the fields of a chat completion request that shape
// its Harmony prompt.
type chatRequest struct {
	Messages        []map[string]json.RawMessage `json:"messages"`
	Tools           json.RawMessage              `json:"tools"`
	ReasoningEffort *string                      `json:"reasoning_effort"`
}

// RenderChat renders a chat completion request body as vLLM's chat path
// renders it for gpt-oss, ending with the opened assistant turn. An error
// wrapping ErrUnsupported means the router should key it approximately.
func RenderChat(body []byte, o Options) (string, error) {
	msgs, err := ChatMessages(body, o)
	if err != nil {
		return "", err
	}
	return RenderForCompletion(msgs)
}

// ChatMessages converts a chat completion request body to the Harmony
// messages vLLM renders: the system and developer preamble, then the
// conversation, with superseded analysis dropped.
func ChatMessages(body []byte, o Options) ([]Message, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, unsupported("read the request: %v", err)
	}
	effort := ""
	if req.ReasoningEffort != nil {
		effort = *req.ReasoningEffort
		if effort != "low" && effort != "medium" && effort != "high" {
			return nil, unsupported("reasoning_effort %q", effort)
		}
	}
	tools, err := functionTools(req.Tools)
	if err != nil {
		return nil, err
	}
	instructions, rest := leadingInstructions(req.Messages)
	msgs := preamble(o, effort, instructions, tools)
	conv, err := conversation(rest)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, dropCurrentTurnAnalysis(conv)...)
	for _, m := range msgs {
		if err := checkText(m); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// preamble is vLLM's build_harmony_preamble: the system message, then a
// developer message when there are instructions or tools.
func preamble(o Options, effort string, instructions *string, tools []Tool) []Message {
	sys := NewSystem()
	sys.StartDate = o.Date
	if effort != "" {
		sys.ReasoningEffort = effort
	}
	devInstructions := instructions
	if o.SystemInstructions {
		devInstructions = nil
		if instructions != nil {
			id := *instructions
			if sys.ModelIdentity != nil && *sys.ModelIdentity != "" {
				id = *sys.ModelIdentity + "\n" + id
			}
			sys.ModelIdentity = &id
		}
	}
	msgs := []Message{{Role: RoleSystem, System: &sys}}
	if (devInstructions != nil && *devInstructions != "") || len(tools) > 0 {
		msgs = append(msgs, Message{Role: RoleDeveloper, Developer: &DeveloperContent{Instructions: devInstructions, Functions: tools}})
	}
	return msgs
}

// functionTools reads the request's tools as get_developer_message keeps
// them: function tools in order; nil when the request has none.
func functionTools(raw json.RawMessage) ([]Tool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Type     *string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, unsupported("read tools: %v", err)
	}
	var tools []Tool
	for _, t := range list {
		if t.Type != nil && *t.Type != "function" {
			return nil, unsupported("tool type %q", *t.Type)
		}
		f := t.Function
		if f.Description == nil {
			// The library's ToolDescription requires a description.
			return nil, unsupported("tool %q has no description", f.Name)
		}
		tool := Tool{Name: f.Name, Description: *f.Description}
		if len(f.Parameters) > 0 && string(f.Parameters) != "null" {
			p := parseJSON(f.Parameters)
			if p == nil || p.kind != 'o' {
				return nil, unsupported("tool %q parameters are not an object", f.Name)
			}
			tool.Parameters = f.Parameters
		}
		tools = append(tools, tool)
	}
	return tools, nil
}

// leadingInstructions is extract_instructions_from_messages: a first
// system or developer message is peeled off, its text the instructions
// (nil when it has none).
func leadingInstructions(msgs []map[string]json.RawMessage) (*string, []map[string]json.RawMessage) {
	if len(msgs) == 0 {
		return nil, msgs
	}
	role := str(msgs[0]["role"])
	if role != RoleSystem && role != RoleDeveloper {
		return nil, msgs
	}
	var s string
	if json.Unmarshal(msgs[0]["content"], &s) == nil {
		return &s, msgs[1:]
	}
	var parts []json.RawMessage
	if json.Unmarshal(msgs[0]["content"], &parts) != nil {
		return nil, msgs[1:]
	}
	var texts []string
	found := false
	for _, p := range parts {
		var ps string
		if json.Unmarshal(p, &ps) == nil {
			texts, found = append(texts, ps), true
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(p, &obj) == nil {
			if t, ok := obj["text"]; ok && string(t) != "null" {
				texts, found = append(texts, str(t)), true
			}
		}
	}
	if !found {
		return nil, msgs[1:]
	}
	joined := strings.Join(texts, "")
	return &joined, msgs[1:]
}

// str decodes a JSON string; "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// checkText refuses text that could spell a special token: the library
// encodes message text as ordinary text, the tokenizer.json the router
// uses would read the token.
func checkText(m Message) error {
	fields := []string{m.Name, m.Recipient, m.ContentType, m.Text}
	if m.System != nil {
		fields = append(fields, m.System.render(false))
	}
	if m.Developer != nil {
		fields = append(fields, m.Developer.render())
	}
	for _, f := range fields {
		if strings.Contains(f, "<|") {
			return unsupported("text spells a special token")
		}
	}
	return nil
}
