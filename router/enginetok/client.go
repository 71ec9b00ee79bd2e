package enginetok

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/replicas"
)

// Defaults for Options' zero values.
const (
	// DefaultTimeout bounds one /tokenize round trip. It is spent before
	// the request is scheduled, so it is short: a slow engine costs a
	// request its exact keys, not its latency.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxResponseBytes bounds a /tokenize response body: room for
	// about two million ids, more than any prompt the router accepts.
	DefaultMaxResponseBytes = 32 << 20
)

// Replicas is what the client needs of the replica set (router/replicas).
type Replicas interface {
	// ForModel lists model's replicas.
	ForModel(model string) []replicas.Replica
	// Healthy reports whether replica's breaker lets requests through.
	Healthy(replica string) bool
}

// Options configure a Client; zero values take the defaults.
type Options struct {
	Replicas Replicas
	// EngineKey is the key for model's engines (vLLM's --api-key), "" for
	// none; nil: none for any model.
	EngineKey func(model string) string
	// Transport reaches the engines (default: a clone of
	// http.DefaultTransport).
	Transport        http.RoundTripper
	Timeout          time.Duration
	MaxResponseBytes int64
	Logger           hclog.Logger
}

// Client tokenizes prompts on engines. Safe for concurrent use. It is a
// prometheus.Collector of llmgw_engine_tokenize_total{model,result}.
type Client struct {
	o     Options
	http  *http.Client
	next  atomic.Uint64 // round-robin over a model's ready replicas
	calls *prometheus.CounterVec

	mu      sync.Mutex
	failing map[string]bool // models whose last call failed, for logging
}

// New returns a client for o.
func New(o Options) (*Client, error) {
	if o.Replicas == nil {
		return nil, errors.New("enginetok: no replica set")
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Client{o: o, http: &http.Client{Transport: o.Transport, Timeout: o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmgw_engine_tokenize_total",
			Help: "Prompts tokenized on an engine's /tokenize by model and result (ok, error); on error the request was routed approximately.",
		}, []string{"model", "result"}),
		failing: map[string]bool{}}, nil
}

// Describe implements prometheus.Collector.
func (c *Client) Describe(ch chan<- *prometheus.Desc) { c.calls.Describe(ch) }

// Collect implements prometheus.Collector.
func (c *Client) Collect(ch chan<- prometheus.Metric) { c.calls.Collect(ch) }

// Tokenize returns the ids a ready replica of model computes for r's
// prompt (it implements router/prompt.Remote). The error names the
// replica and what went wrong.
func (c *Client) Tokenize(ctx context.Context, model string, r *openai.Request) ([]uint32, error) {
	ids, err := c.tokenize(ctx, model, r)
	c.record(model, err)
	return ids, err
}

func (c *Client) tokenize(ctx context.Context, model string, r *openai.Request) ([]uint32, error) {
	rep, ok := c.pick(model)
	if !ok {
		return nil, fmt.Errorf("tokenize on the engines of %s: no ready replica", model)
	}
	body, err := requestBody(model, r)
	if err != nil {
		return nil, fmt.Errorf("tokenize on replica %s: %w", rep.ID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+rep.Address+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("tokenize on replica %s: %w", rep.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.o.EngineKey != nil {
		if key := c.o.EngineKey(model); key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tokenize on replica %s: %w", rep.ID, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tokenize on replica %s: reading the response: %w", rep.ID, err)
	}
	if int64(len(data)) > c.o.MaxResponseBytes {
		return nil, fmt.Errorf("tokenize on replica %s: response over %d bytes", rep.ID, c.o.MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tokenize on replica %s: %s: %s", rep.ID, resp.Status, snippet(data))
	}
	ids, err := ParseResponse(data, 0)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", rep.ID, err)
	}
	return ids, nil
}

// pick is the next of model's replicas that takes requests: healthy and
// not draining.
func (c *Client) pick(model string) (replicas.Replica, bool) {
	reps := c.o.Replicas.ForModel(model)
	if len(reps) == 0 {
		return replicas.Replica{}, false
	}
	start := c.next.Add(1)
	for i := range reps {
		r := reps[(start+uint64(i))%uint64(len(reps))]
		if !r.Draining && c.o.Replicas.Healthy(r.ID) {
			return r, true
		}
	}
	return replicas.Replica{}, false
}

// record counts a call and logs when model starts or stops failing, so a
// broken /tokenize is one warning, not one per request.
func (c *Client) record(model string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	c.calls.WithLabelValues(model, result).Inc()
	c.mu.Lock()
	was := c.failing[model]
	c.failing[model] = err != nil
	c.mu.Unlock()
	switch {
	case err != nil && !was:
		c.o.Logger.Warn("engine tokenization failed; routing the model approximately until it works", "model", model, "error", err)
	case err == nil && was:
		c.o.Logger.Info("engine tokenization works again; routing the model exactly", "model", model)
	}
}

// snippet is the start of an error body, for the error message.
func snippet(b []byte) string {
	const n = 200
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
