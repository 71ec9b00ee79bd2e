package enginemetrics

import "errors"

// errUnauthorized is an engine's 401: it was started with vLLM's --api-key
// and the router sent no key, or the wrong one.
var errUnauthorized = errors.New("status 401 Unauthorized: the engine wants an API key (vLLM --api-key); set the router's engine_api_key")

// noteRefusal warns once when tg's engine starts refusing the router's key
// on its model listing, which costs the replica its LoRA adapters in
// routing, and says so once more when a listing succeeds again; other
// failures change nothing.
func (s *Scraper) noteRefusal(tg Target, refused bool) {
	s.mu.Lock()
	was := s.refused[tg.ID]
	if refused {
		s.refused[tg.ID] = true
	} else {
		delete(s.refused, tg.ID)
	}
	s.mu.Unlock()
	switch {
	case refused && !was:
		s.opts.Logger.Warn("the replica refused the router's engine key on its model listing; its LoRA adapters are not known",
			"replica", tg.ID, "url", tg.ModelsURL, "key_sent", tg.APIKey != "", "fix", "set engine_api_key (LLMGW_ENGINE_API_KEY) to the engine's --api-key")
	case !refused && was:
		s.opts.Logger.Info("the replica accepts the router's engine key again", "replica", tg.ID)
	}
}
