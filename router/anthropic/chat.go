package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// billingHeader starts Claude Code's per-request attribution line, which
// vLLM drops from system text so that it does not defeat prefix caching.
const billingHeader = "x-anthropic-billing-header"

// now is the clock a tool_use block without an id is named by, as vLLM
// names it ("call_<unix seconds>"); tests replace it.
var now = time.Now

// ChatBody returns the chat-completions request JSON that vLLM's Anthropic
// bridge builds from r (its _convert_anthropic_to_openai_request): one
// leading system message, then the messages with thinking as reasoning,
// tool_use as tool_calls and user tool_result blocks as tool messages;
// tools, tool_choice, stop_sequences as stop, sampling parameters,
// output_config, max_tokens and stream. metadata and the
// Anthropic-only block fields (signature, cache_control ...) are dropped, as
// vLLM drops them. The router renders it with openai.Parse(openai.Chat, ...)
// and router/chattemplate.
func (r *Request) ChatBody() ([]byte, error) {
	return r.conv.chatBody()
}

func (c *conversation) chatBody() ([]byte, error) {
	msgs, err := c.chatMessages()
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, bad("messages: the conversation has no message to render")
	}
	body := object{{"model", c.model}, {"messages", msgs}}
	if !c.countingOnly {
		body = append(body, member{"max_tokens", c.maxTokens}, member{"max_completion_tokens", c.maxTokens})
		body = append(body, c.sampling...)
	}
	if c.chatTemplateKwargs != nil {
		body = append(body, member{"chat_template_kwargs", c.chatTemplateKwargs})
	}
	if !c.countingOnly {
		body = append(body, c.streamAndOutput()...)
	}
	body = append(body, c.chatTools()...)
	return marshal(body)
}

// streamAndOutput asks for usage on every chunk when streaming (the
// bridge reads the prompt size off the first one), and maps output_config.
func (c *conversation) streamAndOutput() object {
	var out object
	if c.stream {
		out = append(out, member{"stream", true},
			member{"stream_options", object{{"include_usage", true}, {"continuous_usage_stats", true}}})
	}
	if c.formatSchema != nil {
		out = append(out, member{"response_format", object{
			{"type", c.formatType},
			{"json_schema", object{{"name", c.formatType}, {"schema", c.formatSchema}}},
		}})
	}
	if c.effort != nil {
		out = append(out, member{"reasoning_effort", *c.effort})
	}
	return out
}

// chatTools maps tool_choice (any is "required", tool a named function)
// and tools; with tools and no tool_choice, the choice is "auto".
func (c *conversation) chatTools() object {
	var out object
	var choice any
	if tc := c.toolChoice; tc != nil {
		switch tc.Type {
		case "auto", "none":
			choice = tc.Type
		case "any":
			choice = "required"
		case "tool":
			choice = object{{"type", "function"}, {"function", object{{"name", *tc.Name}}}}
		}
	}
	if c.toolsGiven && choice == nil {
		choice = "auto"
	}
	if choice != nil {
		out = append(out, member{"tool_choice", choice})
	}
	// vLLM passes an empty list on to the template; chat requests refuse
	// one, and templates read [] and no tools alike, so it is left out.
	if len(c.tools) > 0 {
		tools := make([]any, len(c.tools))
		for i, t := range c.tools {
			fn := object{{"name", t.Name}, {"description", t.Description}, {"parameters", withObjectType(t.InputSchema)}}
			if t.DeferLoading != nil {
				fn = append(fn, member{"defer_loading", *t.DeferLoading})
			}
			tools[i] = object{{"type", "function"}, {"function", fn}}
		}
		out = append(out, member{"tools", tools})
	}
	return out
}

// withObjectType adds "type": "object" at the end of a schema without a
// type, as vLLM's AnthropicTool validator does.
func withObjectType(schema json.RawMessage) any {
	v, err := decodeOrdered(schema)
	o, ok := v.(object)
	if err != nil || !ok {
		return schema
	}
	for _, m := range o {
		if m.key == "type" {
			return o
		}
	}
	return append(o, member{"type", "object"})
}

// chatMessages builds the message list: the system message, then each
// non-system message converted.
func (c *conversation) chatMessages() ([]any, error) {
	var out []any
	if sys := c.systemText(); sys != "" {
		out = append(out, object{{"role", "system"}, {"content", sys}})
	}
	for _, m := range c.messages {
		if m.role == "system" {
			continue
		}
		var err error
		if out, err = convertMessage(m, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// systemText joins, without separator, the top-level system prompt and the
// text of every system message inside messages (vLLM hoists them), leaving
// out text blocks that are empty or start with Claude Code's billing
// header.
func (c *conversation) systemText() string {
	var parts []string
	if !isNull(c.system) {
		var s string
		if json.Unmarshal(c.system, &s) == nil {
			parts = append(parts, s)
		} else {
			blocks, _ := readBlocks(c.system, "system")
			parts = append(parts, systemBlocks(blocks)...)
		}
	}
	for _, m := range c.messages {
		if m.role != "system" {
			continue
		}
		if m.text != nil {
			parts = append(parts, *m.text)
		} else {
			parts = append(parts, systemBlocks(m.blocks)...)
		}
	}
	return strings.Join(parts, "")
}

func systemBlocks(blocks []block) []string {
	var out []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != nil && *b.Text != "" && !strings.HasPrefix(*b.Text, billingHeader) {
			out = append(out, *b.Text)
		}
	}
	return out
}

// toolCallID is a tool_use block's id, or vLLM's stand-in for a missing one.
func toolCallID(b block) string {
	if b.ID != nil && *b.ID != "" {
		return *b.ID
	}
	return "call_" + strconv.FormatInt(now().Unix(), 10)
}
