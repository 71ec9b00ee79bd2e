package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// Result is what one request did, as the client saw it.
type Result struct {
	ID int
	// Status is the last HTTP status received (0: no response at all).
	Status int
	// Err says why the request did not complete; empty on success.
	Err string
	// Started is true once any byte of the answer's body arrived: from
	// then on the request is never retried.
	Started bool
	// Attempts counts the routers tried.
	Attempts int
	// Router is the base URL that answered; Replica and Mode come from the
	// router's X-Llmgw-Replica and X-Llmgw-Routing-Mode headers, sent by
	// routers with expose_route_headers (cmd/llmgw/internal/fleet's); else empty.
	Router, Replica, Mode string
	// Sent is when the request left, from the start of the run.
	Sent time.Duration
	// TTFT and E2E run from the first attempt to the first content token
	// and to the end of the stream; ITL are the gaps between content
	// chunks.
	TTFT, E2E time.Duration
	ITL       []time.Duration
	// Usage as the engine reported it in the final chunk.
	PromptTokens, CachedTokens, OutputTokens int
	// CachedReported: the usage carried prompt_tokens_details. vLLM sends
	// it only with --enable-prompt-tokens-details (and for completions
	// only when some tokens were cached), so a 0 CachedTokens without it
	// says nothing.
	CachedReported bool
	// PredictedCachedTokens is the router's X-Llmgw-Cached-Tokens (sent
	// with expose_route_headers): the prompt tokens it predicted cached on
	// Replica; 0 when absent.
	PredictedCachedTokens int
}

// OK reports whether the request completed with a full answer.
func (r *Result) OK() bool { return r.Status == http.StatusOK && r.Err == "" }

// Rejected reports whether the request was refused as invalid: a 4xx
// answer other than 429 (too many requests) and 408 (timeout), such as
// the engine's 400 for a prompt over its max_model_len. That says
// nothing about load, so it is never retried and never counted as shed.
func (r *Result) Rejected() bool {
	return r.Status >= 400 && r.Status < 500 && r.Status != http.StatusTooManyRequests && r.Status != http.StatusRequestTimeout
}

// Options configure a Client.
type Options struct {
	Routers Routers
	Model   string
	// APIKey, when set, is sent as Authorization: Bearer.
	APIKey string
	// Attempts caps the routers tried per request (default 6).
	Attempts int
	// Backoff is the first pause between attempts, doubling to 1 s
	// (default 20 ms).
	Backoff time.Duration
	// HTTP defaults to a client with a 2 s connect timeout and enough idle
	// connections for an open-loop run.
	HTTP *http.Client
}

// Client sends requests to routers, retrying where that is safe.
type Client struct {
	o Options
}

// New returns a Client.
func New(o Options) *Client {
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = 20 * time.Millisecond
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     30 * time.Second,
		}}
	}
	return &Client{o: o}
}

// Close releases idle connections.
func (c *Client) Close() { c.o.HTTP.CloseIdleConnections() }

// forgetter is implemented by router sources that cache (ConsulDNS).
type forgetter interface{ Forget() }

// Do sends r and streams its answer. It tries routers in turn, starting at
// one chosen by the request's ID in the list Routers returned (Consul
// shuffles its DNS answers, so through ConsulDNS the first router is
// effectively random, as for any DNS client), and retries on another
// router whenever nothing of the answer has arrived yet.
func (c *Client) Do(ctx context.Context, r *workload.Request) Result {
	res := Result{ID: r.ID}
	body, err := r.Body(c.o.Model)
	if err != nil {
		res.Err = fmt.Sprintf("encode request: %v", err)
		return res
	}
	start := time.Now()
	tried := map[string]bool{}
	pause := c.o.Backoff
	for attempt := 0; attempt < c.o.Attempts; attempt++ {
		if attempt > 0 {
			if !sleep(ctx, pause) {
				res.Err = ctx.Err().Error()
				return res
			}
			pause = min(2*pause, time.Second)
		}
		routers, err := c.o.Routers.Routers(ctx)
		if err != nil || len(routers) == 0 {
			res.Err = fmt.Sprintf("find routers: %v", err)
			continue
		}
		router := pick(routers, tried, r.ID+attempt)
		tried[router] = true
		res.Attempts++
		res.Router = router
		retry := c.once(ctx, router+r.Path(), body, start, &res)
		if !retry {
			return res
		}
		if f, ok := c.o.Routers.(forgetter); ok {
			f.Forget()
		}
	}
	return res
}

// pick chooses a router not yet tried, rotating by n; when every router
// has been tried it starts over.
func pick(routers []string, tried map[string]bool, n int) string {
	for i := range routers {
		u := routers[(n+i)%len(routers)]
		if !tried[u] {
			return u
		}
	}
	clear(tried)
	return routers[n%len(routers)]
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// once makes one attempt; it reports whether another attempt is safe and
// useful (nothing of the answer arrived and the failure may be transient).
func (c *Client) once(ctx context.Context, url string, body []byte, start time.Time, res *Result) (retry bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		res.Err = err.Error()
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	if c.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.APIKey)
	}
	resp, err := c.o.HTTP.Do(req)
	if err != nil {
		res.Status, res.Err = 0, err.Error()
		return ctx.Err() == nil
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.Replica, res.Mode = resp.Header.Get("X-Llmgw-Replica"), resp.Header.Get("X-Llmgw-Routing-Mode")
	res.PredictedCachedTokens, _ = strconv.Atoi(resp.Header.Get("X-Llmgw-Cached-Tokens"))
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.Err = fmt.Sprintf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	}
	res.Err = ""
	br := bufio.NewReader(resp.Body)
	if _, err := br.Peek(1); err != nil {
		res.Err = fmt.Sprintf("no answer: %v", err)
		return ctx.Err() == nil
	}
	res.Started = true
	if err := readStream(br, start, res); err != nil {
		res.Err = err.Error()
	}
	return false
}

// chunk is the part of a streamed completion or chat chunk we read.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// errNoDone marks a stream that ended without its [DONE] line.
var errNoDone = errors.New("stream ended before [DONE]")

func readStream(br *bufio.Reader, start time.Time, res *Result) error {
	var last time.Time
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				return errNoDone
			}
			return fmt.Errorf("stream interrupted: %w", err)
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			res.E2E = time.Since(start)
			return nil
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return fmt.Errorf("bad chunk %.80q: %w", data, err)
		}
		if ch.Error != nil {
			return fmt.Errorf("error in stream: %s", ch.Error.Message)
		}
		for _, c := range ch.Choices {
			if c.Text == "" && c.Delta.Content == "" {
				continue
			}
			now := time.Now()
			if last.IsZero() {
				res.TTFT = now.Sub(start)
			} else {
				res.ITL = append(res.ITL, now.Sub(last))
			}
			last = now
		}
		if u := ch.Usage; u != nil {
			res.PromptTokens, res.OutputTokens = u.PromptTokens, u.CompletionTokens
			if u.PromptTokensDetails != nil {
				res.CachedTokens, res.CachedReported = u.PromptTokensDetails.CachedTokens, true
			}
		}
	}
}
