package harmony

import (
	"errors"
	"strings"
)

// The formatting tokens of the gpt-oss encoding, each one special token in
// its tokenizer (ids 200002-200012 in o200k_harmony).
const (
	TokStart     = "<|start|>"
	TokMessage   = "<|message|>"
	TokEnd       = "<|end|>"
	TokReturn    = "<|return|>"
	TokCall      = "<|call|>"
	TokChannel   = "<|channel|>"
	TokConstrain = "<|constrain|>"
)

// Roles of Harmony message authors.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ErrUnsupported marks a request whose Harmony rendering the router cannot
// reproduce with certainty; it is keyed approximately.
var ErrUnsupported = errors.New("harmony: rendering not reproducible by the router")

// Message is one Harmony message. Exactly one of Text, System and
// Developer carries its content.
type Message struct {
	Role string
	// Name is the author's name: a tool message's whole header role
	// ("functions.get_weather"), else rendered as "role:name".
	Name        string
	Recipient   string
	Channel     string
	ContentType string
	Text        string
	System      *SystemContent
	Developer   *DeveloperContent
}

// SystemContent is the system message's structured content.
type SystemContent struct {
	ModelIdentity   *string
	KnowledgeCutoff *string
	StartDate       string // "" for none
	ReasoningEffort string // "low", "medium", "high"; "" for none
	Channels        []string
	ChannelRequired bool
}

// DefaultIdentity is the model identity SystemContent.new() carries.
const DefaultIdentity = "You are ChatGPT, a large language model trained by OpenAI."

// NewSystem is the library's SystemContent.new(): default identity,
// knowledge cutoff 2024-06, medium effort, the three channels required.
func NewSystem() SystemContent {
	id, cutoff := DefaultIdentity, "2024-06"
	return SystemContent{
		ModelIdentity: &id, KnowledgeCutoff: &cutoff, ReasoningEffort: "medium",
		Channels: []string{"analysis", "commentary", "final"}, ChannelRequired: true,
	}
}

// DeveloperContent is the developer message's structured content.
type DeveloperContent struct {
	Instructions *string
	// Functions are the tools of the "functions" namespace.
	Functions []Tool
}

// Tool describes one function tool.
type Tool struct {
	Name        string
	Description string
	// Parameters is its JSON schema as the client sent it; nil for none.
	Parameters []byte
}

// RenderForCompletion renders msgs followed by the opening of an
// assistant turn, as render_conversation_for_completion does with the
// default config (auto_drop_analysis): when the last assistant message is
// on the final channel, analysis messages before the first final one are
// dropped.
func RenderForCompletion(msgs []Message) (string, error) {
	hasFunctions := false
	lastFinal := false
	firstFinal := -1
	for i, m := range msgs {
		if m.Developer != nil && len(m.Developer.Functions) > 0 {
			hasFunctions = true
		}
		if m.Role == RoleAssistant {
			lastFinal = m.Channel == "final"
		}
		if firstFinal < 0 && m.Channel == "final" {
			firstFinal = i
		}
	}
	var b strings.Builder
	for i, m := range msgs {
		if lastFinal && i < firstFinal && m.Channel == "analysis" {
			continue
		}
		if err := renderMessage(&b, m, hasFunctions); err != nil {
			return "", err
		}
	}
	b.WriteString(TokStart + RoleAssistant)
	return b.String(), nil
}

// renderMessage writes one message as the library's Render<Message>.
func renderMessage(b *strings.Builder, m Message, hasFunctions bool) error {
	b.WriteString(TokStart)
	if m.Role == RoleTool {
		if m.Name == "" {
			return errors.New("harmony: a tool message needs its author's name")
		}
		b.WriteString(m.Name)
	} else {
		b.WriteString(m.Role)
		if m.Name != "" {
			b.WriteString(":" + m.Name)
		}
	}
	if m.Recipient != "" && m.Recipient != "all" {
		b.WriteString(" to=" + m.Recipient)
	}
	if m.Channel != "" {
		b.WriteString(TokChannel + m.Channel)
	}
	if m.ContentType != "" {
		// A "<|constrain|>json" type renders the marker as its special
		// token after the space; written literally, it is the same text.
		b.WriteString(" " + m.ContentType)
	}
	b.WriteString(TokMessage)
	switch {
	case m.System != nil:
		b.WriteString(m.System.render(hasFunctions))
	case m.Developer != nil:
		b.WriteString(m.Developer.render())
	default:
		b.WriteString(m.Text)
	}
	if m.Role == RoleAssistant && m.Recipient != "" {
		b.WriteString(TokCall)
	} else {
		b.WriteString(TokEnd)
	}
	return nil
}

// render is Render<SystemContent>: sections joined by blank lines.
func (s *SystemContent) render(hasFunctions bool) string {
	var sections, top []string
	if s.ModelIdentity != nil {
		top = append(top, *s.ModelIdentity)
	}
	if s.KnowledgeCutoff != nil {
		top = append(top, "Knowledge cutoff: "+*s.KnowledgeCutoff)
	}
	if s.StartDate != "" {
		top = append(top, "Current date: "+s.StartDate)
	}
	if len(top) > 0 {
		sections = append(sections, strings.Join(top, "\n"))
	}
	if s.ReasoningEffort != "" {
		sections = append(sections, "Reasoning: "+s.ReasoningEffort)
	}
	if len(s.Channels) > 0 {
		h := "# Valid channels: " + strings.Join(s.Channels, ", ") + "."
		if s.ChannelRequired {
			h += " Channel must be included for every message."
		}
		if hasFunctions {
			h += "\nCalls to these tools must go to the commentary channel: 'functions'."
		}
		sections = append(sections, h)
	}
	return strings.Join(sections, "\n\n")
}

// render is Render<DeveloperContent>.
func (d *DeveloperContent) render() string {
	var sections []string
	if d.Instructions != nil {
		sections = append(sections, "# Instructions", *d.Instructions)
	}
	if len(d.Functions) > 0 {
		sections = append(sections, toolsSection("functions", d.Functions))
	}
	return strings.Join(sections, "\n\n")
}

// toolsSection is template_tools_section for one namespace without a
// description.
func toolsSection(ns string, tools []Tool) string {
	parts := []string{"## " + ns + "\n", "namespace " + ns + " {\n"}
	for _, t := range tools {
		for _, line := range rustLines(t.Description) {
			parts = append(parts, "// "+line)
		}
		if t.Parameters != nil {
			parts = append(parts, "type "+t.Name+" = (_: "+schemaToTS(parseJSON(t.Parameters), "")+") => any;\n")
		} else {
			parts = append(parts, "type "+t.Name+" = () => any;\n")
		}
	}
	parts = append(parts, "} // namespace "+ns)
	return "# Tools\n\n" + strings.Join(parts, "\n")
}

// rustLines splits s as Rust's str::lines: on "\n", a trailing "\r"
// removed from each line, no final empty line.
func rustLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
