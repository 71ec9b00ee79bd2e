package prompt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/llmgw/llmgw/internal/blockkey"
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
	// RemoteErr is why the model's engines could not tokenize the prompt
	// (Source.Remote), which was then keyed approximately; nil otherwise.
	RemoteErr error
}

// RetryEvery is how often a model without an encoder looks again for its
// tokenizer (its configured directory, or the local Hugging Face cache), so
// a model whose files arrive after the router started leaves approx mode.
const RetryEvery = time.Minute

// Prompts holds an encoder per model. Safe for concurrent use.
type Prompts struct {
	now func() time.Time

	mu      sync.RWMutex
	enc     map[string]Encoder
	sources map[string]Source    // configured sources, for retries
	tried   map[string]time.Time // last failed look per model without encoder
	load    func(model string, src Source) (Encoder, error)
}

// Source says where one model's tokenizer comes from, in this order:
// Encoder, Dir, Remote, then the local Hugging Face cache.
type Source struct {
	// Encoder is used as given: a custom build or a test injects its own
	// (cmd/vllm-sim/simencoder for vllm-sim's tokenizer in tests).
	Encoder Encoder
	// Dir holds tokenizer.json and the chat template.
	Dir string
	// Remote tokenizes on the model's engines (their /tokenize), one round
	// trip per request, when no Dir is set; see engine.go.
	Remote Remote
	// HarmonyStartDate pins the date a gpt-oss model's Harmony system
	// message carries (HF.PinStartDate), for engines started with the same
	// VLLM_SYSTEM_START_DATE.
	HarmonyStartDate string
}

// New loads an encoder per model. A model whose tokenizer cannot be loaded
// is reported in the returned error list and routed approximately; it never
// stops the router.
func New(models map[string]Source) (*Prompts, []error) {
	p := &Prompts{enc: map[string]Encoder{}, sources: models, tried: map[string]time.Time{}, now: time.Now, load: loadEncoder}
	var errs []error
	names := slices.Sorted(maps.Keys(models))
	for _, m := range names {
		e, err := p.load(m, models[m])
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("model %s: %w (routing it approximately until it loads)", m, err))
			p.tried[m] = p.now()
		case e != nil:
			p.enc[m] = e
		default:
			p.tried[m] = p.now()
		}
	}
	return p, errs
}

// loadEncoder finds model's encoder: the one given, its configured
// directory, or the local Hugging Face cache; nil without error when there
// is none (a model with a Remote then tokenizes on its engines).
func loadEncoder(model string, src Source) (Encoder, error) {
	switch {
	case src.Encoder != nil:
		return src.Encoder, nil
	case src.Dir != "":
		return loadHFPinned(src.Dir, src)
	case src.Remote != nil:
		return nil, nil
	}
	dir, ok := HFCacheDir(model)
	if !ok {
		return nil, nil
	}
	e, err := loadHFPinned(dir, src)
	if err != nil {
		return nil, fmt.Errorf("cached tokenizer %s: %w", dir, err)
	}
	return e, nil
}

// loadHFPinned is LoadHF with src's Harmony date pinned.
func loadHFPinned(dir string, src Source) (*HF, error) {
	h, err := LoadHF(dir)
	if err != nil {
		return nil, err
	}
	if src.HarmonyStartDate != "" {
		h.PinStartDate(src.HarmonyStartDate)
	}
	return h, nil
}

// encoder returns model's encoder, looking for it again (at most once per
// RetryEvery) while it has none. The look happens on the request that
// finds it due; others route approximately meanwhile.
func (p *Prompts) encoder(model string) Encoder {
	p.mu.RLock()
	e, last := p.enc[model], p.tried[model]
	p.mu.RUnlock()
	if e != nil || (!last.IsZero() && p.now().Sub(last) < RetryEvery) {
		return e
	}
	p.mu.Lock()
	if e = p.enc[model]; e != nil || (!p.tried[model].IsZero() && p.now().Sub(p.tried[model]) < RetryEvery) {
		p.mu.Unlock()
		return e
	}
	p.tried[model] = p.now() // claim this look; concurrent requests skip it
	src := p.sources[model]
	p.mu.Unlock()
	e, err := p.load(model, src)
	if err != nil || e == nil {
		return nil
	}
	p.mu.Lock()
	p.enc[model] = e
	delete(p.tried, model)
	p.mu.Unlock()
	return e
}

// Has reports whether model has an encoder now (exact keys possible).
func (p *Prompts) Has(model string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.enc[model] != nil
}

// Target says how a request's prompt is keyed: the base model whose
// encoder renders and tokenizes it, the LoRA adapter it names ("" for the
// base model) and the replicas' block size.
type Target struct {
	Model     string
	LoRA      string
	BlockSize int
}

// Compute renders, tokenizes and hashes r's prompt for r.Model, with
// blockSize tokens per block. An error means the request itself is bad (e.g.
// its messages do not fit the template) and is safe to show the client.
func (p *Prompts) Compute(r *openai.Request, blockSize int) (Result, error) {
	return p.ComputeFor(r, Target{Model: r.Model, BlockSize: blockSize})
}

// ComputeFor is Compute for a request that may name a LoRA adapter: the
// prompt is encoded with t.Model's encoder and its block keys chain from
// the adapter's root (blockkey.Root(t.LoRA)), as drivers key the blocks
// the engine stores for that adapter. Approximate keys are seeded with the
// adapter too, so routing history never credits an adapter with the base
// model's cache.
func (p *Prompts) ComputeFor(r *openai.Request, t Target) (Result, error) {
	return p.ComputeContext(context.Background(), r, t)
}

// ComputeContext is ComputeFor with ctx bounding the round trip of a model
// that tokenizes on its engines (Source.Remote).
func (p *Prompts) ComputeContext(ctx context.Context, r *openai.Request, t Target) (Result, error) {
	enc := p.encoder(t.Model)
	if enc == nil && r.PromptIDs == nil {
		if rem := p.remote(t.Model); rem != nil {
			return p.computeRemote(ctx, rem, r, t), nil
		}
		return p.approx(r, t), nil
	}
	var res Result
	ids := r.PromptIDs
	if ids == nil {
		text := r.Prompt
		if r.Kind == openai.Chat {
			t0 := p.now()
			var err error
			text, err = enc.RenderChat(r)
			res.Render = p.now().Sub(t0)
			if errors.Is(err, chattemplate.ErrMultimodal) || errors.Is(err, ErrApprox) {
				// Media placeholders are the model processor's, and some
				// prompts the renderer cannot vouch for: route on text.
				approx := p.approx(r, t)
				approx.Render = res.Render
				return approx, nil
			}
			if err != nil {
				return res, fmt.Errorf("%w: %v", openai.ErrBadRequest, err)
			}
		}
		t0 := p.now()
		ids = enc.Encode(text, r.AddSpecialTokens)
		res.Tokenize = p.now().Sub(t0)
	}
	p.key(&res, ids, r, t)
	return res, nil
}

// key sets res's block keys and length from the prompt's token ids, cut as
// truncate_prompt_tokens cuts them.
func (p *Prompts) key(res *Result, ids []uint32, r *openai.Request, t Target) {
	ids = truncate(ids, r)
	t0 := p.now()
	keys := blockkey.PromptKeys(make([]blockkey.Key, 0, len(ids)/max(t.BlockSize, 1)), t.LoRA, r.CacheSalt, ids, t.BlockSize)
	res.Keys = make([]uint64, len(keys))
	for i, k := range keys {
		res.Keys[i] = uint64(k)
	}
	res.Hash = p.now().Sub(t0)
	res.Tokens = len(ids)
}

// approx keys r's text in TextChunk-byte blocks, for a model without an
// encoder or a prompt the encoder cannot reproduce.
func (p *Prompts) approx(r *openai.Request, t Target) Result {
	var res Result
	text := r.Prompt
	if r.Kind == openai.Chat {
		text = plainChat(r.Messages)
	}
	t0 := p.now()
	var seed uint64
	if t.LoRA != "" {
		seed = uint64(blockkey.Root(t.LoRA))
	}
	res.ApproxKeys = textKeysFrom(nil, seed, text)
	res.Tokens = len(text)/4 + 1
	res.Hash = p.now().Sub(t0)
	return res
}

// truncate applies vLLM's truncate_prompt_tokens to the prompt's ids: the
// replica keeps the last n tokens (the first n with truncation_side
// "right"). -1 means the model's input limit, which the router does not
// know; such prompts are keyed whole.
func truncate(ids []uint32, r *openai.Request) []uint32 {
	if r.TruncatePromptTokens == nil {
		return ids
	}
	n := *r.TruncatePromptTokens
	if n < 0 || n >= len(ids) {
		return ids
	}
	if r.TruncateRight {
		return ids[:n]
	}
	return ids[len(ids)-n:]
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
func TextKeys(dst []uint64, text string) []uint64 { return textKeysFrom(dst, 0, text) }

// textKeysFrom is TextKeys with the chain starting at parent.
func textKeysFrom(dst []uint64, parent uint64, text string) []uint64 {
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

// HF is a Hugging Face tokenizer with the renderer vLLM uses for its chat
// prompts: the chat template, or Harmony for gpt-oss.
type HF struct {
	tok       *tokenizer.PrefixCache
	tmpl      *chattemplate.Template // nil: the model has no chat template
	renderer  string                 // RendererJinja or RendererHarmony
	now       func() time.Time       // Harmony's current date, unless pinned
	startDate string                 // pinned by PinStartDate
}

// LoadHF loads dir's tokenizer.json and chat template, and reads its
// config.json for the renderer vLLM picks (see detectRenderer). A
// Mistral-format directory is ErrMistralFormat.
func LoadHF(dir string) (*HF, error) {
	renderer, err := detectRenderer(dir)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	h := &HF{tok: tokenizer.NewPrefixCache(tok, 1024), renderer: renderer, now: time.Now}
	if t, err := chattemplate.Load(dir); err == nil {
		h.tmpl = t
	}
	return h, nil
}

// Renderer says how h renders chat prompts: RendererJinja or
// RendererHarmony.
func (h *HF) Renderer() string { return h.renderer }

// Encode implements Encoder.
func (h *HF) Encode(text string, addSpecial bool) []uint32 { return h.tok.Encode(text, addSpecial) }

// RenderChat implements Encoder.
func (h *HF) RenderChat(r *openai.Request) (string, error) {
	if h.renderer == RendererHarmony {
		return h.renderHarmony(r)
	}
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

var _ Encoder = (*HF)(nil)
