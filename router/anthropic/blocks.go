package anthropic

import (
	"encoding/json"
	"fmt"
	"slices"
)

// message is one Anthropic message: its content is either text or blocks.
type message struct {
	role   string
	text   *string
	blocks []block
}

// block is one content block, its fields as vLLM's AnthropicContentBlock
// declares them (all optional; the type decides which are read).
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	Source    json.RawMessage `json:"source"`
	ID        *string         `json:"id"`
	ToolUseID *string         `json:"tool_use_id"`
	Name      *string         `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
	ToolName  *string         `json:"tool_name"`
	Thinking  *string         `json:"thinking"`
	Signature *string         `json:"signature"`
	Data      *string         `json:"data"`
}

// blockTypes are the content-block types vLLM accepts.
var blockTypes = []string{"text", "image", "tool_use", "tool_result", "tool_reference", "thinking", "redacted_thinking"}

// roles maps the roles vLLM accepts to the one it uses: Claude Code's
// "ctx" and "msg" are read as "user".
var roles = map[string]string{"user": "user", "assistant": "assistant", "system": "system", "ctx": "user", "msg": "user"}

func readMessages(raw json.RawMessage) ([]message, error) {
	if isNull(raw) {
		return nil, bad("messages is required")
	}
	var items []struct {
		Role    json.RawMessage `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, bad("messages must be a list of message objects")
	}
	out := make([]message, len(items))
	for i, it := range items {
		field := fmt.Sprintf("messages[%d]", i)
		var role string
		if json.Unmarshal(it.Role, &role) != nil || roles[role] == "" {
			return nil, bad("%s.role must be one of user, assistant, system", field)
		}
		out[i].role = roles[role]
		text, blocks, err := readContent(it.Content, field+".content")
		if err != nil {
			return nil, err
		}
		out[i].text, out[i].blocks = text, blocks
	}
	return out, nil
}

// readContent reads a string or a list of blocks.
func readContent(raw json.RawMessage, field string) (*string, []block, error) {
	if isNull(raw) {
		return nil, nil, bad("%s is required", field)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &s, nil, nil
	}
	blocks, err := readBlocks(raw, field)
	return nil, blocks, err
}

func readBlocks(raw json.RawMessage, field string) ([]block, error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, bad("%s must be a string or a list of content blocks", field)
	}
	out := make([]block, len(items))
	for j, it := range items {
		f := fmt.Sprintf("%s[%d]", field, j)
		if !isObject(it) {
			return nil, bad("%s must be a content block object", f)
		}
		if err := json.Unmarshal(it, &out[j]); err != nil {
			return nil, bad("%s: %s", f, fieldError(err))
		}
		b := &out[j]
		if !slices.Contains(blockTypes, b.Type) {
			return nil, bad("%s.type %q is not a content-block type vLLM accepts (%v)", f, b.Type, blockTypes)
		}
		if !isNull(b.Source) && !isObject(b.Source) {
			return nil, bad("%s.source must be an object", f)
		}
		if !isNull(b.Input) && !isObject(b.Input) {
			return nil, bad("%s.input must be an object", f)
		}
		if err := checkToolContent(b.Content, f+".content"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkToolContent checks a block's content: a string, a list of objects,
// or null.
func checkToolContent(raw json.RawMessage, field string) error {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return bad("%s must be a string or a list of objects", field)
	}
	for i, it := range items {
		if !isObject(it) {
			return bad("%s[%d] must be an object", field, i)
		}
	}
	return nil
}

// readSystem reads the top-level system prompt: a string or text blocks.
func readSystem(raw json.RawMessage, c *conversation) error {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		c.system = raw
		return nil
	}
	if _, err := readBlocks(raw, "system"); err != nil {
		return err
	}
	c.system = raw
	return nil
}

// toolChoice is Anthropic's tool_choice.
type toolChoice struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

func readToolChoice(raw json.RawMessage) (*toolChoice, error) {
	if isNull(raw) {
		return nil, nil
	}
	var tc toolChoice
	if !isObject(raw) || json.Unmarshal(raw, &tc) != nil {
		return nil, bad("tool_choice must be an object with a string type")
	}
	if !slices.Contains([]string{"auto", "any", "tool", "none"}, tc.Type) {
		return nil, bad("tool_choice.type must be one of auto, any, tool, none")
	}
	if tc.Type == "tool" && (tc.Name == nil || *tc.Name == "") {
		return nil, bad("tool_choice.name is required when type is 'tool'")
	}
	return &tc, nil
}

// tool is one tool definition.
type tool struct {
	Name         string          `json:"name"`
	Description  *string         `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Strict       *bool           `json:"strict"`
	DeferLoading *bool           `json:"defer_loading"`
}

func readTools(raw json.RawMessage) ([]tool, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, bad("tools must be a list of tool objects")
	}
	out := make([]tool, len(items))
	for i, it := range items {
		f := fmt.Sprintf("tools[%d]", i)
		var probe struct {
			Name json.RawMessage `json:"name"`
		}
		if !isObject(it) || json.Unmarshal(it, &probe) != nil {
			return nil, bad("%s must be an object", f)
		}
		if isNull(probe.Name) {
			return nil, bad("%s.name is required", f)
		}
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return nil, bad("%s: %s", f, fieldError(err))
		}
		if !isObject(out[i].InputSchema) {
			return nil, bad("%s.input_schema is required and must be an object", f)
		}
	}
	return out, nil
}

// fieldError names the field a decoding error is about.
func fieldError(err error) string {
	if te, ok := err.(*json.UnmarshalTypeError); ok && te.Field != "" {
		return fmt.Sprintf("%s has the wrong type (got JSON %s)", te.Field, te.Value)
	}
	return err.Error()
}
