package server

import "net/http"

// tokenize serves vLLM's /tokenize in both forms: a prompt (special tokens
// added by default) or messages (rendered with the chat template; special
// tokens not added by default). Messages render with the chat template even
// for gpt-oss, as vLLM's /tokenize goes through its Jinja path.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	body, ok := s.readRequest(w, r, &req)
	if !ok {
		return
	}
	var ids []uint32
	switch {
	case req.Prompt != nil && req.Messages != nil:
		writeError(w, badRequest("give either prompt or messages, not both"))
		return
	case req.Prompt != nil:
		ids = s.tok.Encode(*req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	case req.Messages != nil:
		var err *apiError
		ids, err = s.renderChatAs(body, req.Messages, req.AddGenerationPrompt, req.ContinueFinalMessage, req.AddSpecialTokens != nil && *req.AddSpecialTokens, true)
		if err != nil {
			writeError(w, err)
			return
		}
	default:
		writeError(w, badRequest("prompt or messages is required"))
		return
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: s.opts.MaxModelLen, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []uint32{}
	}
	if req.ReturnTokenStrs {
		for _, id := range ids {
			str, err := s.tok.Decode([]uint32{id}, false)
			if err != nil {
				writeError(w, err)
				return
			}
			resp.TokenStrs = append(resp.TokenStrs, str)
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	if _, ok := s.readRequest(w, r, &req); !ok {
		return
	}
	text, err := s.tok.Decode(req.Tokens, false)
	if err != nil {
		writeError(w, badRequest("%v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
