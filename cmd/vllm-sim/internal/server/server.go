// Package server is vllm-sim's HTTP surface: the OpenAI-compatible routes
// vLLM serves (completions, chat completions with SSE streaming, the
// Responses API, models, tokenize, detokenize, health, reset_prefix_cache,
// metrics), with vLLM's
// response and error shapes, plus debug routes that expose the KV cache's
// ground truth to tests.
package server

import (
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
	// ResponsesStore is VLLM_ENABLE_RESPONSES_API_STORE: keep the answers
	// of Responses requests with store true (off: store is ignored).
	ResponsesStore bool
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
}

// New builds the server's routes.
func New(opts Options, ranks []Rank, tok Tokenizer, reg *prometheus.Registry, log *slog.Logger) *Server {
	s := &Server{opts: opts, ranks: ranks, tok: tok, reg: reg, log: log, mux: http.NewServeMux(), keys: newAPIKeys(opts.APIKeys),
		store: newResponseStore(opts.ResponsesStore)}
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": opts.Version})
	})
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /v1/responses", s.createResponse)
	s.mux.HandleFunc("GET /v1/responses/{id}", s.getResponse)
	s.mux.HandleFunc("POST /v1/responses/{id}/cancel", s.cancelResponse)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /detokenize", s.detokenize)
	s.mux.HandleFunc("POST /reset_prefix_cache", s.resetPrefixCache)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("GET /debug/kv/blocks", s.debugBlocks)
	s.mux.HandleFunc("POST /debug/kv/drop", s.debugDrop)
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
	s.mux.ServeHTTP(w, r)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		Parent      any    `json:"parent"`
		MaxModelLen int    `json:"max_model_len"`
	}
	var data []model
	for _, name := range s.servedNames() {
		data = append(data, model{ID: name, Object: "model", Created: time.Now().Unix(), OwnedBy: "vllm", Root: s.opts.Model, MaxModelLen: s.opts.MaxModelLen})
	}
	for _, l := range s.opts.LoRAs {
		data = append(data, model{ID: l.Name, Object: "model", Created: time.Now().Unix(), OwnedBy: "vllm", Root: l.Path, Parent: s.servedNames()[0], MaxModelLen: s.opts.MaxModelLen})
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

// pick chooses the data-parallel rank with the fewest requests, like vLLM's
// internal load balancer.
func (s *Server) pick() Rank {
	best := s.ranks[0]
	for _, r := range s.ranks[1:] {
		if r.Engine.Load() < best.Engine.Load() {
			best = r
		}
	}
	return best
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
