package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Outcome is how one request ended, as its client saw it.
type Outcome int

const (
	// OK: a plain request got 200 and a whole body; a stream reached
	// [DONE] with no error event.
	OK Outcome = iota
	// Failed: no answer worth the name after the client's retries: a
	// status other than 200, or the connection lost before the response
	// began (or, for a plain request, before its body was read).
	Failed
	// ErrorEvent: a stream that began and ended with an error event.
	ErrorEvent
	// Cut: a stream that began and whose connection ended without
	// [DONE] or an error event.
	Cut
	// Hung: the request had not ended within Load.Bound.
	Hung
)

func (o Outcome) String() string {
	return [...]string{"ok", "failed", "error event", "cut", "hung"}[o]
}

// Result is one request of the load.
type Result struct {
	Start    time.Time
	Stream   bool
	Outcome  Outcome
	Attempts int    // 1 plus the client's retries
	Err      string // why, when not OK
}

// Load is a steady mixed load: Workers clients, each sending chat
// completions one after another, streamed and plain in turn, every
// prompt one of a few long shared system prompts and a user turn of its
// own, so routing by cached prefix is exact and a stream cut mid-way has
// a prefix worth migrating.
//
// Its clients retry as the OpenAI SDKs do (two retries, after 0.5 s and
// 1 s): on a connection error before any response, and on 408, 409,
// 429 and 5xx; each retry goes to the next router, as a client that
// resolves the routers' DNS name would. A stream that has begun is never
// retried.
type Load struct {
	Routers   func() []string // the routers' API base URLs, asked per request
	APIKey    string
	Model     string
	Workers   int
	MaxTokens int
	// Bound is how long a request may take before it counts as hung.
	Bound  time.Duration
	Client *http.Client // no timeout of its own: Bound is the deadline

	mu       sync.Mutex
	results  []Result
	next     int            // round robin over Routers
	streamed map[string]int // streams being read, by the replica serving them
}

// prefixes are the shared system prompts, long enough to fill many KV
// blocks.
var prefixes = func() []string {
	out := make([]string, 4)
	for i := range out {
		var b strings.Builder
		for w := range 120 {
			fmt.Fprintf(&b, "sys%d_%d ", i, w)
		}
		out[i] = b.String()
	}
	return out
}()

// Run sends requests until ctx ends, then waits for those in flight:
// they run on to their own end or Bound, so stopping the load cuts
// nothing.
func (l *Load) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for w := range l.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				r := l.one(w, n)
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// Results are the requests ended so far, in the order they ended.
func (l *Load) Results() []Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Result(nil), l.results...)
}

// Busy is a replica serving the most streams being read now (by the
// router's X-Llmgw-Replica header), or "" when none is: the replica whose
// death a fault wants clients to see.
func (l *Load) Busy() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	best, most := "", 0
	for id, n := range l.streamed {
		if n > most || n == most && id < best {
			best, most = id, n
		}
	}
	return best
}

// reading counts a stream from replica as being read (by +1) or ended
// (by -1).
func (l *Load) reading(replica string, by int) {
	if replica == "" {
		return // routed by a router that does not say
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streamed == nil {
		l.streamed = map[string]int{}
	}
	if l.streamed[replica] += by; l.streamed[replica] <= 0 {
		delete(l.streamed, replica)
	}
}

// Count is how many requests have ended.
func (l *Load) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// one sends worker w's n-th request, with the client's retries.
func (l *Load) one(w, n int) Result {
	stream := n%2 == 0
	body, _ := json.Marshal(map[string]any{
		"model": l.Model, "stream": stream, "max_tokens": l.MaxTokens, "seed": w*100000 + n, "ignore_eos": true,
		"messages": []map[string]string{
			{"role": "system", "content": prefixes[(w+n)%len(prefixes)]},
			{"role": "user", "content": fmt.Sprintf("worker %d asks question %d", w, n)},
		},
	})
	r := Result{Start: time.Now(), Stream: stream}
	ctx, cancel := context.WithTimeout(context.Background(), l.Bound)
	defer cancel()
	for attempt := 0; ; attempt++ {
		r.Attempts = attempt + 1
		retry, err := l.send(ctx, body, stream, &r)
		if r.Outcome != OK && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.Outcome, r.Err = Hung, fmt.Sprintf("not ended within %s: %v", l.Bound, err)
			return r
		}
		if !retry || attempt == 2 {
			return r
		}
		t := time.NewTimer(500 * time.Millisecond << attempt)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// send makes one attempt and records its outcome in r; retry says
// whether the client would try again.
func (l *Load) send(ctx context.Context, body []byte, stream bool, r *Result) (retry bool, err error) {
	url := l.router() + "/v1/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		r.Outcome, r.Err = Failed, err.Error()
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.APIKey)
	resp, err := l.Client.Do(req)
	if err != nil {
		r.Outcome, r.Err = Failed, err.Error()
		return true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		r.Outcome, r.Err = Failed, fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(msg))
		code := resp.StatusCode
		return code == 408 || code == 409 || code == 429 || code >= 500, nil
	}
	if !stream {
		var c struct {
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) == 0 {
			r.Outcome, r.Err = Failed, fmt.Sprintf("body: %v (%d choices)", err, len(c.Choices))
			return err != nil, err // a body cut with the connection is retried
		}
		r.Outcome, r.Err = OK, ""
		return false, nil
	}
	replica := resp.Header.Get("X-Llmgw-Replica")
	l.reading(replica, 1)
	defer l.reading(replica, -1)
	r.Outcome, err = readStream(resp.Body)
	r.Err = ""
	if err != nil {
		r.Err = err.Error()
	}
	return false, err
}

// readStream reads an SSE body to its end and says how it ended.
func readStream(body io.Reader) (Outcome, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return OK, nil
		}
		var ev struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(data), &ev) == nil && len(ev.Error) > 0 && string(ev.Error) != "null" {
			return ErrorEvent, fmt.Errorf("error event: %s", ev.Error)
		}
	}
	if err := sc.Err(); err != nil {
		return Cut, err
	}
	return Cut, errors.New("the stream ended without [DONE]")
}

// router picks the next router, round robin over those listed now.
func (l *Load) router() string {
	urls := l.Routers()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	if len(urls) == 0 {
		return "http://127.0.0.1:1" // none listed: a connection error, retried
	}
	return urls[l.next%len(urls)]
}
