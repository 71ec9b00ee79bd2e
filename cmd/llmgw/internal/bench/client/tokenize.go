package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// maxTokenizeBytes bounds one /tokenize answer: room for about two million
// ids, far more than any workload prompt.
const maxTokenizeBytes = 32 << 20

// Tokenize returns every request's prompt ids, in request order, as the
// engine at engineURL (an OpenAI server with vLLM's /tokenize, such as a
// vllm-sim shard) computes them for model: the ids the engines cache, so
// the oracle's bound is in the fleet's own tokens. It runs before the
// timed run, parallel requests at a time (at least 1).
func Tokenize(ctx context.Context, hc *http.Client, engineURL, model string, reqs []workload.Request, parallel int) ([][]uint32, error) {
	out := make([][]uint32, len(reqs))
	errs := make([]error, len(reqs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = tokenizeOne(ctx, hc, engineURL, model, &reqs[i])
			}
		}()
	}
feed:
	for i := range reqs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("tokenize request %d on %s: %w", reqs[i].ID, engineURL, err)
		}
	}
	return out, nil
}

func tokenizeOne(ctx context.Context, hc *http.Client, engineURL, model string, r *workload.Request) ([]uint32, error) {
	body, err := r.TokenizeBody(model)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, engineURL+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(data) > maxTokenizeBytes {
		return nil, fmt.Errorf("response over %d bytes", maxTokenizeBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data[:min(len(data), 200)]))
	}
	var tr struct {
		Count  *int      `json:"count"`
		Tokens *[]uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("tokenize response: %w", err)
	}
	if tr.Tokens == nil {
		return nil, errors.New("tokenize response: no tokens field")
	}
	if tr.Count != nil && *tr.Count != len(*tr.Tokens) {
		return nil, fmt.Errorf("tokenize response: count %d but %d tokens", *tr.Count, len(*tr.Tokens))
	}
	return *tr.Tokens, nil
}
