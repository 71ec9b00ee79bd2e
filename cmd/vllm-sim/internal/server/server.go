// Package server is vllm-sim's HTTP surface: the OpenAI-compatible routes
// vLLM serves (completions, chat completions with SSE streaming, the
// Responses API and Anthropic's messages and count_tokens for a generate
// model; embeddings, pooling, classify, score and rerank for a pooling
// model; models, tokenize, detokenize, health, reset_prefix_cache,
// metrics), with vLLM's response and error shapes, plus debug routes that
// expose the KV cache's ground truth to tests.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/engine"
	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// Tokenizer turns text into the model's token ids and back, and renders
// chat conversations with the model's template.
type Tokenizer interface {
	Encode(text string, addSpecialTokens bool) []uint32
	Decode(ids []uint32, skipSpecial bool) (string, error)
	RenderChat(chat Chat) (string, error)
}

// Chat is a conversation to render: the request body as the client sent it
// (templates print tools and arguments in the client's key order) and the
// messages after vLLM's normalisation.
type Chat struct {
	Body                []byte
	Messages            []Message
	AddGenerationPrompt bool
	ContinueFinal       bool
	// Template asks for the chat template whatever the model's chat path
	// renders: vLLM's /tokenize and pooling endpoints render with it even
	// for gpt-oss, whose chat completions render Harmony.
	Template bool
}

// Message is a chat turn after vLLM's normalisation.
type Message struct {
	Role    string
	Content string
}

// Rank is one data-parallel engine with its publisher (nil when events are
// off).
type Rank struct {
	ID     int
	Engine *engine.Engine
	Drop   func(n int) // withholds the next n event batches; nil without events
	// Transfer is the rank's side of disaggregated serving; zero without it.
	Transfer RankTransfer
}

// Options configure the server.
type Options struct {
	Model            string // the MODEL argument
	ServedNames      []string
	MaxModelLen      int
	BlockSize        int
	APIKeys          []string // --api-key values, else VLLM_API_KEY; none: open
	Seed             int64
	Overhead         time.Duration // per-request API time before scheduling
	MeanOutputTokens int           // mean length before the "model" emits EOS
	Version          string
	LoRAs            []LoRA
	Transfer         *Transfer // nil: no KV connector
	// Task is what the model serves, as vLLM names it: TaskGenerate
	// (the default), or a pooling task, TaskEmbed or TaskClassify. It
	// decides the routes served (registerAPI).
	Task string
	// NumLabels is a classifier's label count (default 2); with one, the
	// classifier is a cross-encoder and serves score and rerank.
	NumLabels int
	// ResponsesStore is VLLM_ENABLE_RESPONSES_API_STORE: keep the answers
	// of Responses requests with store true (off: store is ignored).
	ResponsesStore bool
	// PromptTokensDetails is --enable-prompt-tokens-details: chat and
	// completion usage carries prompt_tokens_details.cached_tokens only
	// with it, as in vLLM (promptDetails).
	PromptTokensDetails bool
}

// LoRA is an adapter served under its own model name; requests for it hash
// their blocks with its name, as vLLM mixes the LoRA into block hashes.
type LoRA struct {
	Name, Path string
	ID         int
}

// Server serves one simulated vLLM instance.
type Server struct {
	opts    Options
	ranks   []Rank
	tok     Tokenizer
	reg     *prometheus.Registry
	log     *slog.Logger
	counter atomic.Uint64
	mux     *http.ServeMux
	keys    apiKeys
	store   *responseStore
	dp      *balancer
}

// New builds the server's routes.
func New(opts Options, ranks []Rank, tok Tokenizer, reg *prometheus.Registry, log *slog.Logger) *Server {
	if opts.Task == "" {
		opts.Task = TaskGenerate
	}
	if opts.NumLabels <= 0 {
		opts.NumLabels = 2
	}
	rt := newRoutes()
	s := &Server{opts: opts, ranks: ranks, tok: tok, reg: reg, log: log, mux: rt.mux, keys: newAPIKeys(opts.APIKeys),
		store: newResponseStore(opts.ResponsesStore), dp: newBalancer(len(ranks), engineStats(ranks))}
	rt.handleFunc("GET", "/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	rt.handleFunc("GET", "/version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": opts.Version})
	})
	s.registerAPI(rt)
	rt.handleFunc("POST", "/reset_prefix_cache", s.resetPrefixCache)
	rt.handle("GET", "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	rt.handleFunc("GET", "/debug/kv/blocks", s.debugBlocks)
	rt.handleFunc("POST", "/debug/kv/drop", s.debugDrop)
	return s
}

// ServeHTTP echoes X-Request-Id, as vLLM does, checks the API key on /v1
// paths (before routing, so an unknown /v1 path is 401 too) and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("X-Request-Id"); id != "" {
		w.Header().Set("X-Request-Id", id)
	}
	if !s.keys.allows(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	if ctx := withDPRank(r.Context(), r); ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	s.mux.ServeHTTP(w, r)
}

// modelCard and modelPermission are vLLM's ModelCard and ModelPermission
// (vllm/entrypoints/openai/engine/protocol.py), as its
// OpenAIServingModels.show_available_models fills them: root is the model
// path (an adapter's path), max_model_len the engine's for a base model
// and null for an adapter.
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"`
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	now := time.Now().Unix()
	card := func(id, root string, parent *string, maxLen *int) modelCard {
		perm := modelPermission{ID: requestID("modelperm", s.counter.Add(1)), Object: "model_permission", Created: now,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*"}
		return modelCard{ID: id, Object: "model", Created: now, OwnedBy: "vllm", Root: root, Parent: parent, MaxModelLen: maxLen, Permission: []modelPermission{perm}}
	}
	data := []modelCard{}
	maxLen := s.opts.MaxModelLen
	for _, name := range s.servedNames() {
		data = append(data, card(name, s.opts.Model, nil, &maxLen))
	}
	base := s.servedNames()[0]
	for _, l := range s.opts.LoRAs {
		data = append(data, card(l.Name, l.Path, &base, nil))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) servedNames() []string {
	if len(s.opts.ServedNames) > 0 {
		return s.opts.ServedNames
	}
	return []string{s.opts.Model}
}

// checkModel reports a request for a model this server does not serve; an
// empty name means the default, as vLLM allows.
func (s *Server) checkModel(name string) *apiError {
	if name == "" || slices.Contains(s.servedNames(), name) {
		return nil
	}
	if _, ok := s.lora(name); ok {
		return nil
	}
	return &apiError{status: http.StatusNotFound, typ: "NotFoundError", msg: fmt.Sprintf("The model `%s` does not exist.", name)}
}

// lora returns the adapter a model name refers to.
func (s *Server) lora(name string) (LoRA, bool) {
	for _, l := range s.opts.LoRAs {
		if l.Name == name {
			return l, true
		}
	}
	return LoRA{}, false
}

func (s *Server) modelName(requested string) string {
	if requested != "" {
		return requested
	}
	return s.servedNames()[0]
}

// apiError is an error with the status, OpenAI type and (when vLLM names
// one) the offending parameter a client sees.
type apiError struct {
	status int
	typ    string
	msg    string
	param  string // "" for none (null)
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "BadRequestError", msg: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", msg: err.Error()}
	}
	info := errorInfo{Message: ae.msg, Type: ae.typ, Code: ae.status}
	if ae.param != "" {
		info.Param = ae.param
	}
	writeJSON(w, ae.status, errorBody{Error: info})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// maxBody bounds request bodies; vLLM has no fixed limit, but a simulator
// has no business buffering gigabytes.
const maxBody = 64 << 20

// modelRequest is a request body naming the model it is for.
type modelRequest interface{ model() string }

func (r *completionRequest) model() string { return r.Model }
func (r *chatRequest) model() string       { return r.Model }
func (r *tokenizeRequest) model() string   { return r.Model }
func (r *detokenizeRequest) model() string { return r.Model }

// readRequest decodes a JSON body into req and checks its model, answering
// the client itself on failure. It returns the raw body and whether to go on.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, req modelRequest) ([]byte, bool) {
	body, err := decodeBody(r, req)
	if err == nil {
		err = s.checkModel(req.model())
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return body, true
}

func decodeBody(r *http.Request, v any) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		return nil, badRequest("reading the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, badRequest("invalid JSON body: %v", err)
	}
	return body, nil
}

// pick chooses the data-parallel rank of a request of ctx as vLLM's
// internal load balancer does (balancer), and makes r leave the rank's
// in-flight count as it leaves the engine; if the request is never
// submitted, the caller calls r.Left itself.
func (s *Server) pick(ctx context.Context, r *engine.Request) (Rank, error) {
	i, leave, err := s.dp.pick(ctx)
	if err != nil {
		return Rank{}, err
	}
	r.Left = leave
	return s.ranks[i], nil
}

func (s *Server) resetPrefixCache(w http.ResponseWriter, r *http.Request) {
	for _, rank := range s.ranks {
		var resetErr error
		if err := rank.Engine.Do(r.Context(), func(p *kvcache.Pool) { resetErr = p.Reset() }); err != nil {
			writeError(w, err)
			return
		}
		if resetErr != nil {
			writeError(w, &apiError{status: http.StatusConflict, typ: "ConflictError", msg: fmt.Sprintf("engine %d: %v", rank.ID, resetErr)})
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func requestID(prefix string, n uint64) string { return fmt.Sprintf("%s-%016x", prefix, n) }

// joinParts joins the non-empty text parts with "\n": vLLM drops a part
// whose text is empty before joining.
func joinParts(parts []contentPart) string {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if (p.Type == "text" || p.Type == "") && p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}
