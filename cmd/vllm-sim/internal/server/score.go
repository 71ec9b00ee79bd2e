package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// scoreTexts reads one side of a score request: a string or a list of
// strings.
func scoreTexts(raw json.RawMessage, field string) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("%s is required", field)
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil || len(many) == 0 {
		return nil, badRequest("%s must be a string or a non-empty list of strings", field)
	}
	return many, nil
}

// sides picks the query and document sides under whichever names the
// request used (queries/documents, queries/items, data_1/data_2,
// text_1/text_2), as vLLM's ScoreRequest union does.
func (r *scoreRequest) sides() ([]string, []string, *apiError) {
	pairs := []struct {
		a, b   json.RawMessage
		na, nb string
	}{
		{r.Queries, r.Documents, "queries", "documents"},
		{r.Queries, r.Items, "queries", "items"},
		{r.Data1, r.Data2, "data_1", "data_2"},
		{r.Text1, r.Text2, "text_1", "text_2"},
	}
	for _, p := range pairs {
		if len(p.a) == 0 || len(p.b) == 0 {
			continue
		}
		q, err := scoreTexts(p.a, p.na)
		if err != nil {
			return nil, nil, err
		}
		d, err := scoreTexts(p.b, p.nb)
		if err != nil {
			return nil, nil, err
		}
		return q, d, nil
	}
	return nil, nil, badRequest("give queries and documents (or queries and items, data_1 and data_2, text_1 and text_2)")
}

// scores scores each document against its query: one query against every
// document, or pairwise, as vLLM accepts (1:1, 1:N, N:N). An embedding
// model embeds every text on its own and scores by cosine similarity (a
// bi-encoder); a one-label classifier reads each query and document as one
// prompt (a cross-encoder). It returns the scores and the pooled prompts.
func (s *Server) scores(r *http.Request, model, salt string, queries, docs []string) ([]float64, []pooled, *apiError) {
	if len(queries) != 1 && len(queries) != len(docs) {
		return nil, nil, badRequest("Input lengths must be either 1:1, 1:N or N:N")
	}
	query := func(i int) string { return queries[min(i, len(queries)-1)] }
	var prompts [][]uint32
	if s.opts.Task == TaskEmbed {
		for _, q := range queries {
			prompts = append(prompts, s.tok.Encode(q, true))
		}
		for _, d := range docs {
			prompts = append(prompts, s.tok.Encode(d, true))
		}
	} else {
		for i, d := range docs {
			prompts = append(prompts, append(s.tok.Encode(query(i), true), s.tok.Encode(d, false)...))
		}
	}
	for _, p := range prompts {
		if err := s.checkInputLength(len(p), "score"); err != nil {
			return nil, nil, err
		}
	}
	done, err := s.runPooling(r.Context(), model, salt, prompts)
	if err != nil {
		return nil, nil, &apiError{status: http.StatusInternalServerError, typ: "InternalServerError", msg: err.Error()}
	}
	out := make([]float64, len(docs))
	for i := range docs {
		if s.opts.Task == TaskEmbed {
			qv, dv := hidden(done[min(i, len(queries)-1)].ids), hidden(done[len(queries)+i].ids)
			for k := range qv {
				out[i] += qv[k] * dv[k]
			}
		} else {
			out[i] = probs(hidden(done[i].ids), 1)[0]
		}
	}
	return out, done, nil
}

// readScore decodes a score or rerank request and its salt, answering the
// client itself on failure.
func (s *Server) readScore(w http.ResponseWriter, r *http.Request) (*scoreRequest, string, bool) {
	var req scoreRequest
	if _, ok := s.readRequest(w, r, &req); !ok {
		return nil, "", false
	}
	salt, err := cacheSalt(req.CacheSalt)
	if err != nil {
		writeError(w, err)
		return nil, "", false
	}
	return &req, salt, true
}

func (s *Server) score(w http.ResponseWriter, r *http.Request) {
	req, salt, ok := s.readScore(w, r)
	if !ok {
		return
	}
	queries, docs, err := req.sides()
	var sc []float64
	var done []pooled
	if err == nil {
		sc, done, err = s.scores(r, req.Model, salt, queries, docs)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	data := make([]scoreData, len(sc))
	for i, x := range sc {
		data[i] = scoreData{Index: i, Object: "score", Score: x}
	}
	writeJSON(w, http.StatusOK, listResponse{ID: requestID("score", s.counter.Add(1)), Object: "list", Created: time.Now().Unix(), Model: s.modelName(req.Model), Data: data, Usage: usageOfPooled(done)})
}

// rerank serves /rerank (Jina's and Cohere's shape): the documents by
// relevance to the query, best first, top_n of them (0: all).
func (s *Server) rerank(w http.ResponseWriter, r *http.Request) {
	req, salt, ok := s.readScore(w, r)
	if !ok {
		return
	}
	var query string
	if json.Unmarshal(req.Query, &query) != nil {
		writeError(w, badRequest("query must be a string"))
		return
	}
	docs, err := scoreTexts(req.Documents, "documents")
	var sc []float64
	var done []pooled
	if err == nil {
		sc, done, err = s.scores(r, req.Model, salt, []string{query}, docs)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	results := make([]rerankResult, len(docs))
	for i, d := range docs {
		results[i] = rerankResult{Index: i, Document: rerankDocument{Text: d}, RelevanceScore: sc[i]}
	}
	slices.SortStableFunc(results, func(a, b rerankResult) int {
		switch {
		case a.RelevanceScore > b.RelevanceScore:
			return -1
		case a.RelevanceScore < b.RelevanceScore:
			return 1
		}
		return 0
	})
	if req.TopN > 0 && req.TopN < len(results) {
		results = results[:req.TopN]
	}
	u := usageOfPooled(done)
	writeJSON(w, http.StatusOK, rerankResponse{ID: requestID("rerank", s.counter.Add(1)), Model: s.modelName(req.Model), Usage: rerankUsage{PromptTokens: u.PromptTokens, TotalTokens: u.TotalTokens}, Results: results})
}
