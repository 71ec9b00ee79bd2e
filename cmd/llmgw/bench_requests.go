package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// requestRecord is one line of -requests-out: where one request of one
// policy went, what the router predicted there and what the engine
// reported, so routing decisions can be traced turn by turn (a session's
// replica, a prediction against the engine's cached_tokens).
type requestRecord struct {
	Policy       string  `json:"policy"`
	ID           int     `json:"id"`
	Group        string  `json:"group"`
	Replica      string  `json:"replica"`
	SentMS       float64 `json:"sent_ms"`
	TTFTMS       float64 `json:"ttft_ms"`
	Status       int     `json:"status"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	// PredictedCachedTokens is the router's X-Llmgw-Cached-Tokens: what it
	// predicted cached on the replica it chose.
	PredictedCachedTokens int `json:"predicted_cached_tokens"`
}

// requestLog writes requestRecords as JSON lines, from the requests'
// goroutines; the first write error is kept and stops further writes.
type requestLog struct {
	mu     sync.Mutex
	enc    *json.Encoder
	groups map[int]string
	err    error
}

func newRequestLog(w io.Writer, wl workload.Workload) *requestLog {
	l := &requestLog{enc: json.NewEncoder(w), groups: map[int]string{}}
	for _, r := range wl.Requests {
		l.groups[r.ID] = r.Group
	}
	return l
}

func (l *requestLog) record(p bench.Policy, r client.Result) {
	rec := requestRecord{Policy: p.Name, ID: r.ID, Group: l.groups[r.ID], Replica: r.Replica,
		SentMS: ms(r.Sent.Seconds()), TTFTMS: ms(r.TTFT.Seconds()), Status: r.Status,
		PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, PredictedCachedTokens: r.PredictedCachedTokens}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		if err := l.enc.Encode(rec); err != nil {
			l.err = fmt.Errorf("write request record: %w", err)
		}
	}
}

// Err is the first write error; nil for a nil log.
func (l *requestLog) Err() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func ms(s float64) float64 { return s * 1000 }
