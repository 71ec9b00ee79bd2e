package simtokenizer

import "strings"

// Message is one chat turn after vLLM's normalisation: list-style content
// parts already joined into one string.
type Message struct {
	Role    string
	Content string
}

// RenderChat renders messages with a ChatML template, the format Qwen models
// use: each turn is "<|im_start|>role\ncontent<|im_end|>\n", and the
// generation prompt opens an assistant turn. With continueFinal the last
// message is left open (no end marker) so the model continues it.
func RenderChat(msgs []Message, addGenerationPrompt, continueFinal bool) string {
	var sb strings.Builder
	for i, m := range msgs {
		sb.WriteString("<|im_start|>")
		sb.WriteString(m.Role)
		sb.WriteByte('\n')
		sb.WriteString(m.Content)
		if continueFinal && i == len(msgs)-1 {
			return sb.String()
		}
		sb.WriteString("<|im_end|>\n")
	}
	if addGenerationPrompt {
		sb.WriteString("<|im_start|>assistant\n")
	}
	return sb.String()
}
