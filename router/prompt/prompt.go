package prompt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/simtokenizer"
	"github.com/llmgw/llmgw/router/chattemplate"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/tokenizer"
)

// TextChunk is the size in bytes of the text blocks hashed for approximate
// routing when a model has no tokenizer.
const TextChunk = 64

// Encoder renders and tokenizes prompts for one model.
type Encoder interface {
	// Encode returns the token ids of text.
	Encode(text string, addSpecial bool) []uint32
	// RenderChat renders a chat request as the model's template does.
	RenderChat(r *openai.Request) (string, error)
}

// Result is a request's prompt as routing sees it.
type Result struct {
	// Keys are the canonical block keys; nil when the model has no encoder.
	Keys []uint64
	// ApproxKeys are chained hashes of TextChunk-byte text blocks, set when
	// Keys is nil.
	ApproxKeys []uint64
	// Tokens is the prompt length in tokens (estimated from bytes without
	// an encoder).
	Tokens int
	// Timings of each stage, for the overhead histograms.
	Render, Tokenize, Hash time.Duration
}

// Prompts holds the encoders of every configured model. Safe for concurrent
// use after construction.
type Prompts struct {
	enc map[string]Encoder
	now func() time.Time
}

// Source says where one model's tokenizer comes from.
type Source struct {
	// Dir holds tokenizer.json and the chat template.
	Dir string
	// Sim selects vllm-sim's built-in tokenizer.
	Sim bool
}

// New loads an encoder per model. A model whose tokenizer cannot be loaded
// is reported in the returned error list and routed approximately; it never
// stops the router.
func New(models map[string]Source) (*Prompts, []error) {
	p := &Prompts{enc: map[string]Encoder{}, now: time.Now}
	var errs []error
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		src := models[m]
		switch {
		case src.Dir != "":
			e, err := LoadHF(src.Dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("model %s: %w (routing it approximately)", m, err))
				continue
			}
			p.enc[m] = e
		case src.Sim:
			p.enc[m] = Sim{}
		default:
			if dir, ok := HFCacheDir(m); ok {
				e, err := LoadHF(dir)
				if err != nil {
					errs = append(errs, fmt.Errorf("model %s: cached tokenizer %s: %w (routing it approximately)", m, dir, err))
					continue
				}
				p.enc[m] = e
			}
		}
	}
	return p, errs
}

// Has reports whether model has an encoder (exact keys possible).
func (p *Prompts) Has(model string) bool { return p.enc[model] != nil }

// Compute renders, tokenizes and hashes r's prompt with blockSize tokens per
// block. An error means the request itself is bad (e.g. its messages do not
// fit the template) and is safe to show the client.
func (p *Prompts) Compute(r *openai.Request, blockSize int) (Result, error) {
	var res Result
	enc := p.enc[r.Model]
	if enc == nil && r.PromptIDs == nil {
		text := r.Prompt
		if r.Kind == openai.Chat {
			text = plainChat(r.Messages)
		}
		t0 := p.now()
		res.ApproxKeys = TextKeys(nil, text)
		res.Tokens = len(text)/4 + 1
		res.Hash = p.now().Sub(t0)
		return res, nil
	}
	ids := r.PromptIDs
	if ids == nil {
		text := r.Prompt
		if r.Kind == openai.Chat {
			t0 := p.now()
			var err error
			text, err = enc.RenderChat(r)
			res.Render = p.now().Sub(t0)
			if err != nil {
				return res, fmt.Errorf("%w: %v", openai.ErrBadRequest, err)
			}
		}
		t0 := p.now()
		ids = enc.Encode(text, r.AddSpecialTokens)
		res.Tokenize = p.now().Sub(t0)
	}
	t0 := p.now()
	keys := blockkey.PromptKeys(make([]blockkey.Key, 0, len(ids)/max(blockSize, 1)), "", r.CacheSalt, ids, blockSize)
	res.Keys = make([]uint64, len(keys))
	for i, k := range keys {
		res.Keys[i] = uint64(k)
	}
	res.Hash = p.now().Sub(t0)
	res.Tokens = len(ids)
	return res, nil
}

func plainChat(msgs []openai.Message) string {
	var n int
	for _, m := range msgs {
		n += len(m.Role) + len(m.Content) + 2
	}
	b := make([]byte, 0, n)
	for _, m := range msgs {
		b = append(b, m.Role...)
		b = append(b, '\n')
		b = append(b, m.Content...)
		b = append(b, '\n')
	}
	return string(b)
}

// TextKeys appends chained hashes of text's full TextChunk-byte blocks.
func TextKeys(dst []uint64, text string) []uint64 {
	var parent uint64
	var buf [8 + TextChunk]byte
	for len(text) >= TextChunk {
		for i := range 8 {
			buf[i] = byte(parent >> (8 * i))
		}
		copy(buf[8:], text[:TextChunk])
		parent = xxhash.Sum64(buf[:])
		dst = append(dst, parent)
		text = text[TextChunk:]
	}
	return dst
}

// Sim is vllm-sim's built-in tokenizer and ChatML template.
type Sim struct{}

// Encode implements Encoder.
func (Sim) Encode(text string, addSpecial bool) []uint32 {
	return simtokenizer.Tokenizer{}.Encode(text, addSpecial)
}

// RenderChat implements Encoder.
func (Sim) RenderChat(r *openai.Request) (string, error) {
	m := make([]simtokenizer.Message, len(r.Messages))
	for i, msg := range r.Messages {
		m[i] = simtokenizer.Message{Role: msg.Role, Content: msg.Content}
	}
	return simtokenizer.RenderChat(m, r.AddGenerationPrompt, r.ContinueFinal), nil
}

// HF is a Hugging Face tokenizer with its chat template.
type HF struct {
	tok  *tokenizer.PrefixCache
	tmpl *chattemplate.Template // nil: the model has no chat template
}

// LoadHF loads dir's tokenizer.json and chat template.
func LoadHF(dir string) (*HF, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	h := &HF{tok: tokenizer.NewPrefixCache(tok, 1024)}
	if t, err := chattemplate.Load(dir); err == nil {
		h.tmpl = t
	}
	return h, nil
}

// Encode implements Encoder.
func (h *HF) Encode(text string, addSpecial bool) []uint32 { return h.tok.Encode(text, addSpecial) }

// RenderChat implements Encoder.
func (h *HF) RenderChat(r *openai.Request) (string, error) {
	if h.tmpl == nil {
		return "", errors.New("the model has no chat template; use /v1/completions")
	}
	req, err := chattemplate.ParseRequest(r.Body)
	if err != nil {
		return "", err
	}
	return h.tmpl.Render(req)
}

// HFCacheDir finds model's newest snapshot in the local Hugging Face cache
// ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub) holding a
// tokenizer.json.
func HFCacheDir(model string) (string, bool) {
	hub := os.Getenv("HF_HUB_CACHE")
	if hub == "" {
		if home := os.Getenv("HF_HOME"); home != "" {
			hub = filepath.Join(home, "hub")
		} else if h, err := os.UserHomeDir(); err == nil {
			hub = filepath.Join(h, ".cache", "huggingface", "hub")
		}
	}
	if hub == "" {
		return "", false
	}
	repo := "models--" + filepath.ToSlash(model)
	repo = strings.ReplaceAll(repo, "/", "--")
	matches, _ := filepath.Glob(filepath.Join(hub, repo, "snapshots", "*", "tokenizer.json"))
	var best string
	var bestTime time.Time
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.ModTime().After(bestTime) {
			best, bestTime = filepath.Dir(m), fi.ModTime()
		}
	}
	return best, best != ""
}

var (
	_ Encoder = Sim{}
	_ Encoder = (*HF)(nil)
)
