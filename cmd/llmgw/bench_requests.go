package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	Policy string `json:"policy"`
	// Rate is the sweep's arrival rate for this run (-rates); absent in a
	// single-rate run.
	Rate         float64 `json:"rate,omitempty"`
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
	rate   float64
	groups map[int]string
	err    error
}

// createRequestLog creates the -requests-out file at path for the records
// of workload wl; without a path it returns a nil log, which records
// nothing. finish closes the file and reports the first error of any
// write or of the close; it may be called more than once (a deferred
// call after a checked one does nothing).
func createRequestLog(path string, wl workload.Workload) (l *requestLog, finish func() error, err error) {
	if path == "" {
		return nil, func() error { return nil }, nil
	}
	out, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("-requests-out: %w", err)
	}
	l = newRequestLog(out, wl)
	var once sync.Once
	return l, func() error {
		once.Do(func() {
			if cerr := out.Close(); cerr != nil {
				l.mu.Lock()
				if l.err == nil {
					l.err = fmt.Errorf("-requests-out: %w", cerr)
				}
				l.mu.Unlock()
			}
		})
		return l.Err()
	}, nil
}

func newRequestLog(w io.Writer, wl workload.Workload) *requestLog {
	l := &requestLog{enc: json.NewEncoder(w)}
	l.at(0, wl)
	return l
}

// at makes the records that follow belong to workload wl, run at rate (0
// outside a sweep): a sweep builds one workload per rate and runs them one
// after another.
func (l *requestLog) at(rate float64, wl workload.Workload) {
	groups := make(map[int]string, len(wl.Requests))
	for _, r := range wl.Requests {
		groups[r.ID] = r.Group
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rate, l.groups = rate, groups
}

func (l *requestLog) record(p bench.Policy, r client.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rec := requestRecord{Policy: p.Name, Rate: l.rate, ID: r.ID, Group: l.groups[r.ID], Replica: r.Replica,
		SentMS: ms(r.Sent.Seconds()), TTFTMS: ms(r.TTFT.Seconds()), Status: r.Status,
		PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, PredictedCachedTokens: r.PredictedCachedTokens}
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
