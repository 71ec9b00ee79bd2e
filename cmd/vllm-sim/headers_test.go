package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStreamHeadersBeforeFirstToken: a streamed request's status and
// headers reach the client as soon as it is accepted, before its first
// token, as from vLLM (uvicorn writes them on http.response.start). The
// prefill here is modelled to take hours, so only headers sent ahead of
// the first token can arrive; the request's deadline only bounds a
// failure.
func TestStreamHeadersBeforeFirstToken(t *testing.T) {
	p := startSim(t, nil, "--sim-latency=true", "--sim-prefill-per-token", "10s", "--block-size", "16")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	body := `{"model":"sim-model","prompt":` + quote(words(0, 600)) + `,"max_tokens":3,"stream":true}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no response headers while the prompt is prefilled: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("status %d, content type %q; want 200 and an event stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}
