package server

import (
	"net/http"
	"slices"
	"strings"
)

// routes registers handlers on a mux and answers what no handler takes as
// FastAPI (Starlette) does: an unknown path 404 {"detail":"Not Found"}, a
// known path with another method 405 {"detail":"Method Not Allowed"} with
// an Allow header.
type routes struct {
	mux     *http.ServeMux
	allowed map[string][]string // path -> methods registered on it
}

func newRoutes() *routes {
	rt := &routes{mux: http.NewServeMux(), allowed: map[string][]string{}}
	rt.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return rt
}

// handle registers h for method on path; the first registration of a path
// also answers its other methods with a 405.
func (rt *routes) handle(method, path string, h http.Handler) {
	rt.mux.Handle(method+" "+path, h)
	if _, seen := rt.allowed[path]; !seen {
		rt.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", strings.Join(rt.allowed[path], ", "))
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
		})
	}
	if !slices.Contains(rt.allowed[path], method) {
		rt.allowed[path] = append(rt.allowed[path], method)
	}
}

func (rt *routes) handleFunc(method, path string, h http.HandlerFunc) { rt.handle(method, path, h) }

// registerAPI registers the serving routes the model's task brings, as
// vLLM's build_app does: the generate routes for a generate model; for a
// pooling model /pooling, /v1/embeddings (embed), /classify (classify),
// and the score and rerank paths where scoring is enabled (an embedding
// model, or a classifier with one label). A path the task does not bring
// answers 404, as in vLLM.
func (s *Server) registerAPI(rt *routes) {
	rt.handleFunc("GET", "/v1/models", s.models)
	rt.handleFunc("POST", "/tokenize", s.tokenize)
	rt.handleFunc("POST", "/detokenize", s.detokenize)
	switch s.opts.Task {
	case TaskGenerate, "":
		rt.handleFunc("POST", "/v1/completions", s.completions)
		rt.handleFunc("POST", "/v1/chat/completions", s.chat)
		rt.handleFunc("POST", "/v1/responses", s.createResponse)
		rt.handleFunc("GET", "/v1/responses/{id}", s.getResponse)
		rt.handleFunc("POST", "/v1/responses/{id}/cancel", s.cancelResponse)
		rt.handleFunc("POST", "/v1/messages", s.messages)
		rt.handleFunc("POST", "/v1/messages/count_tokens", s.countTokens)
		return
	case TaskEmbed:
		rt.handleFunc("POST", "/v1/embeddings", s.embeddings)
	case TaskClassify:
		rt.handleFunc("POST", "/classify", s.classify)
	}
	rt.handleFunc("POST", "/pooling", s.pooling)
	if s.opts.Task == TaskEmbed || s.opts.NumLabels == 1 {
		for _, p := range []string{"/score", "/v1/score"} {
			rt.handleFunc("POST", p, s.score)
		}
		for _, p := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
			rt.handleFunc("POST", p, s.rerank)
		}
	}
}
