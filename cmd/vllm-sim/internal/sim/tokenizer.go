package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/server"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simtokenizer"
	"github.com/llmgw/llmgw/router/chattemplate"
	"github.com/llmgw/llmgw/router/harmony"
	"github.com/llmgw/llmgw/router/tokenizer"
)

// loadTokenizer returns the built-in tokenizer, or the model's own from a
// Hugging Face directory (tokenizer.json, tokenizer_config.json, and the
// chat template) through the same packages the router uses, so both sides
// produce the same ids. It logs the load's start and end, as vLLM logs its
// model load: a launcher waiting for the Uvicorn line can tell a process
// still loading from one that is stuck.
func loadTokenizer(dir string, log *slog.Logger) (server.Tokenizer, error) {
	if dir == "" {
		return builtin{}, nil
	}
	log.Info("loading tokenizer", "dir", dir)
	start := time.Now()
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer %s: %w", dir, err)
	}
	log.Info("loaded tokenizer", "dir", dir, "took", time.Since(start).Round(time.Millisecond))
	// Like vLLM, a model without a usable chat template still serves
	// completions; chat requests then fail with the template's error.
	h := &hf{tok: tok, harmony: isGptOss(dir)}
	h.tmpl, h.tmplErr = chattemplate.Load(dir)
	return h, nil
}

// isGptOss reports whether dir's config.json has model_type "gpt_oss",
// vLLM's test for rendering chat completions with Harmony.
func isGptOss(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return false
	}
	var cfg struct {
		ModelType string `json:"model_type"`
	}
	return json.Unmarshal(b, &cfg) == nil && cfg.ModelType == "gpt_oss"
}

// harmonyDate is the date vLLM writes in a gpt-oss system message:
// VLLM_SYSTEM_START_DATE, else the local date now.
func harmonyDate() string {
	if d := os.Getenv("VLLM_SYSTEM_START_DATE"); d != "" {
		return d
	}
	return time.Now().Format("2006-01-02")
}

// builtin adapts the shared deterministic tokenizer, which routers use too
// for simulated fleets, to the server.
type builtin struct{ simtokenizer.Tokenizer }

func (builtin) RenderChat(c server.Chat) (string, error) {
	m := make([]simtokenizer.Message, len(c.Messages))
	for i, msg := range c.Messages {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return simtokenizer.RenderChat(m, c.AddGenerationPrompt, c.ContinueFinal), nil
}

// hf is a model's own tokenizer and chat template; harmony says its chat
// completions render in the Harmony format, as vLLM renders gpt-oss.
type hf struct {
	tok     *tokenizer.Tokenizer
	tmpl    *chattemplate.Template
	tmplErr error // why there is no template
	harmony bool
}

func (h *hf) Encode(text string, addSpecial bool) []uint32 { return h.tok.Encode(text, addSpecial) }

func (h *hf) Decode(ids []uint32, skipSpecial bool) (string, error) {
	for _, id := range ids {
		if _, ok := h.tok.Token(id); !ok {
			return "", fmt.Errorf("token id %d is not in the vocabulary", id)
		}
	}
	return h.tok.Decode(ids, skipSpecial), nil
}

func (h *hf) RenderChat(c server.Chat) (string, error) {
	if h.harmony && !c.Template {
		text, err := harmony.RenderChat(c.Body, harmony.Options{Date: harmonyDate()})
		// What the router's renderer will not vouch for (prompts vLLM
		// releases render differently, or refuse) the simulator serves
		// with the template, so such requests still run.
		if !errors.Is(err, harmony.ErrUnsupported) {
			return text, err
		}
	}
	if h.tmpl == nil {
		return "", h.tmplErr
	}
	req, err := chattemplate.ParseRequest(c.Body)
	if err != nil {
		return "", err
	}
	return h.tmpl.Render(req)
}

var (
	_ server.Tokenizer = builtin{}
	_ server.Tokenizer = (*hf)(nil)
)
