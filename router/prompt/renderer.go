package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/router/harmony"
	"github.com/llmgw/llmgw/router/openai"
)

// ErrApprox marks a prompt an Encoder cannot reproduce exactly: the
// request is keyed approximately rather than with keys that match nothing.
// Encoders wrap it (HF does for Harmony requests the router cannot vouch
// for).
var ErrApprox = errors.New("prompt not reproducible by the router")

// ErrMistralFormat is why a tokenizer directory with Mistral-format files
// (tekken.json, tokenizer.model.v*) is not loaded: vLLM's default
// tokenizer mode ("auto") tokenizes such a model with mistral_common,
// whose rendering the router does not mirror. The model is keyed on its
// engines (engine_tokenize: /tokenize goes through the same renderer) or
// approximately.
var ErrMistralFormat = errors.New("the tokenizer directory is in Mistral format, which vLLM tokenizes with mistral_common; " +
	"set engine_tokenize to key it exactly on its engines")

// Renderers a tokenizer directory's chat prompts go through.
const (
	// RendererJinja is the model's Hugging Face chat template.
	RendererJinja = "jinja"
	// RendererHarmony is the Harmony format, which vLLM uses for every
	// model whose config.json has model_type "gpt_oss" (router/harmony).
	RendererHarmony = "harmony"
)

// detectRenderer says how vLLM renders chat prompts for the model in dir,
// as vLLM decides: Mistral-format files select mistral_common
// (ErrMistralFormat), model_type "gpt_oss" selects Harmony, anything else
// the chat template.
func detectRenderer(dir string) (string, error) {
	for _, pattern := range []string{"tekken.json", "tokenizer.model.v*"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) > 0 {
			return "", ErrMistralFormat
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return RendererJinja, nil // a tokenizer-only directory
	}
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	// A config.json vLLM could not read serves no model; the tokenizer
	// files still key completions.
	if json.Unmarshal(b, &cfg) == nil && cfg.ModelType == "gpt_oss" {
		return RendererHarmony, nil
	}
	return RendererJinja, nil
}

// HarmonyDate is the conversation start date the router writes in a
// gpt-oss system message: the engine writes its own local date when the
// request arrives, which the router takes to be today in UTC (engines in
// containers run in UTC unless told otherwise).
func HarmonyDate(now time.Time) string { return now.UTC().Format("2006-01-02") }

// PinStartDate has h write date (YYYY-MM-DD) in every gpt-oss system
// message, for engines started with the same VLLM_SYSTEM_START_DATE; the
// router's clock no longer matters then, nor does midnight. Call it
// before h serves requests.
func (h *HF) PinStartDate(date string) { h.startDate = date }

// errHarmonyResponses is why a gpt-oss Responses request is keyed
// approximately: vLLM builds its Harmony messages on the Responses path
// (vllm/entrypoints/openai/responses/harmony.py), not from the chat
// request the router converts it to. Assistant input is pinned to the
// final channel, reasoning items become analysis messages and tool
// outputs are named from earlier function calls there, so keys from the
// chat rendering could claim hits the engine does not have.
var errHarmonyResponses = errors.New("gpt-oss Responses input is rendered on vLLM's Responses path, which the router does not mirror")

// renderHarmony renders a gpt-oss chat request; what the renderer cannot
// vouch for is ErrApprox.
func (h *HF) renderHarmony(r *openai.Request) (string, error) {
	if r.Responses {
		return "", fmt.Errorf("%w: %w", ErrApprox, errHarmonyResponses)
	}
	date := h.startDate
	if date == "" {
		date = HarmonyDate(h.now())
	}
	text, err := harmony.RenderChat(r.Body, harmony.Options{Date: date})
	if errors.Is(err, harmony.ErrUnsupported) {
		return "", fmt.Errorf("%w: %w", ErrApprox, err)
	}
	return text, err
}
