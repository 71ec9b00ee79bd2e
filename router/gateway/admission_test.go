package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/tenant"
)

// busyFleet is a gateway over one replica that takes one request at a time
// (the busy filter at max_in_flight 1). Each request the replica gets
// reports its prompt on entered and holds the replica until the test sends
// on release. Requests carry their tenant in X-Test-Tenant, as the
// authentication would put it in the context.
type busyFleet struct {
	h       *harness
	url     string
	entered chan string
	release chan struct{}
	// inside counts the requests in the replica; most is its maximum,
	// which the busy filter must keep at 1.
	inside, most atomic.Int32
}

func newBusyFleet(t *testing.T, edit func(*testDeps), tenants ...*tenant.Tenant) *busyFleet {
	t.Helper()
	f := &busyFleet{entered: make(chan string, 16), release: make(chan struct{})}
	replica := backend(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string }
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		n := f.inside.Add(1)
		defer f.inside.Add(-1)
		for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
		}
		if len(req.Messages) > 0 {
			f.entered <- req.Messages[0].Content
		}
		select {
		case <-f.release:
		case <-r.Context().Done():
		}
		io.WriteString(w, `{}`)
	})
	t.Cleanup(func() { close(f.release) }) // before the replica's server closes
	f.h = newHarnessWith(t, func(d *testDeps, c *scheduler.Config) {
		d.Route.Options.QueueTimeout, d.Route.Options.MaxQueue = time.Minute, 64
		edit(d)
		c.Filters = append(c.Filters, scheduler.Spec{Type: "busy", Params: []byte(`{"max_in_flight":1}`)})
	}, replica)
	byName := map[string]*tenant.Tenant{}
	for _, tn := range tenants {
		byName[tn.Name] = tn
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tn := byName[r.Header.Get("X-Test-Tenant")]; tn != nil {
			r = r.WithContext(tenant.NewContext(r.Context(), tn))
		}
		f.h.gw.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

// answer is what a client got.
type answer struct {
	code       int
	retryAfter string
	body       []byte
}

// send posts a chat request with prompt content on its own goroutine.
func (f *busyFleet) send(ctx context.Context, t *testing.T, who, priority, content string) <-chan answer {
	out := make(chan answer, 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions",
		strings.NewReader(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":%q}]}`, content)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test-Tenant", who)
	if priority != "" {
		req.Header.Set(admission.HeaderPriority, priority)
	}
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{code: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		out <- answer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: b}
	}()
	return out
}

// occupy sends a request that takes the replica and waits until it has.
func (f *busyFleet) occupy(t *testing.T) <-chan answer {
	t.Helper()
	a := f.send(context.Background(), t, "", "", "occupant")
	if got := <-f.entered; got != "occupant" {
		t.Fatalf("replica got %q first", got)
	}
	return a
}

// queue sends a request and waits until it is queued.
func (f *busyFleet) queue(ctx context.Context, t *testing.T, who, priority, content string) <-chan answer {
	t.Helper()
	before := f.h.waiting()
	a := f.send(ctx, t, who, priority, content)
	poll.Until(t, content+" to queue", func() bool { return f.h.waiting() == before+1 })
	return a
}

// TestBackpressure: over real HTTP, a busy fleet answers 429 with
// Retry-After in OpenAI's shape when the queue is full, when one tenant's
// share of it is, and when the wait runs out.
func TestBackpressure(t *testing.T) {
	a, b := &tenant.Tenant{Name: "a"}, &tenant.Tenant{Name: "b"}
	tests := []struct {
		name     string
		edit     func(*testDeps)
		queued   []string // tenants whose requests wait first
		who      string   // the request answered
		code     int
		errType  string
		contains string
		reason   string // llmgw_queue_rejected_total's
	}{
		{"queue full", func(d *testDeps) { d.Route.Options.MaxQueue = 2 }, []string{"a", "b"}, "b", 429, openai.TypeRateLimit, "the queue is full (2 requests waiting)", "queue_full"},
		{"tenant's share full", func(d *testDeps) { d.Route.Options.MaxQueuePerTenant = 1 }, []string{"a", "b"}, "a", 429, openai.TypeRateLimit, "this key's share of the queue is full (1 waiting, its limit)", "tenant_queue_full"},
		{"wait timed out", func(d *testDeps) { d.Route.Options.QueueTimeout = 50 * time.Millisecond }, nil, "a", 429, openai.TypeRateLimit, "within the queue timeout of 50ms", "timeout"},
		{"no queue", func(d *testDeps) { d.Route.Options.QueueTimeout = 0 }, nil, "a", 429, openai.TypeRateLimit, "requests do not queue", "no_queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newBusyFleet(t, tt.edit, a, b)
			first := f.occupy(t)
			var waiting []<-chan answer
			for i, who := range tt.queued {
				waiting = append(waiting, f.queue(context.Background(), t, who, "", fmt.Sprintf("waiter %d", i)))
			}
			got := <-f.send(context.Background(), t, tt.who, "", "refused")
			if got.code != tt.code {
				t.Fatalf("status %d (%s); want %d", got.code, got.body, tt.code)
			}
			e := openAIError(t, got.body)
			if e.Type != tt.errType || !strings.Contains(e.Message, tt.contains) {
				t.Errorf("error %+v; want type %s and a message containing %q", e, tt.errType, tt.contains)
			}
			t.Logf("%d %q, Retry-After: %s", got.code, e.Message, got.retryAfter)
			if s, err := strconv.Atoi(got.retryAfter); err != nil || s < 1 {
				t.Errorf("Retry-After %q; want whole seconds, at least 1", got.retryAfter)
			}
			if n := f.h.waiting(); n != len(tt.queued) {
				t.Errorf("%d waiting after the refusal; want the %d queued before", n, len(tt.queued))
			}
			f.checkQueueMetrics(t, tt.reason, len(tt.queued))
			f.serveInTurn(t, first, waiting)
			if m := f.most.Load(); m != 1 {
				t.Errorf("the replica had %d requests at once; its limit is 1", m)
			}
		})
	}

}

// TestUnavailableFleet: a fleet with no healthy replica at all answers 503
// without Retry-After, and the request does not queue.
func TestUnavailableFleet(t *testing.T) {
	f := newBusyFleet(t, func(*testDeps) {})
	for range 3 {
		f.h.set.Failed("r0") // three failures open the breaker
	}
	got := <-f.send(context.Background(), t, "", "", "hello")
	if got.code != http.StatusServiceUnavailable || got.retryAfter != "" {
		t.Fatalf("status %d, Retry-After %q (%s); want 503 without Retry-After", got.code, got.retryAfter, got.body)
	}
	if e := openAIError(t, got.body); e.Type != openai.TypeUnavailable || !strings.Contains(e.Message, "no healthy replica serves m") {
		t.Errorf("error %+v", e)
	}
	if n := f.h.waiting(); n != 0 {
		t.Errorf("%d waiting; a request with no replica must not queue", n)
	}
}

// checkQueueMetrics checks that /metrics counts one refusal for reason
// and, when requests were queued in the band, the queued ones waiting.
func (f *busyFleet) checkQueueMetrics(t *testing.T, reason string, queued int) {
	t.Helper()
	_, metrics := get(t, f.h.admin.URL+"/metrics")
	series := []string{fmt.Sprintf(`llmgw_queue_rejected_total{band="0",reason=%q} 1`, reason)}
	if queued > 0 { // else no band was ever queued in
		series = append(series, fmt.Sprintf(`llmgw_queue_waiting{band="0"} %d`, queued))
	}
	for _, s := range series {
		if !strings.Contains(string(metrics), s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}

// serveInTurn releases the occupant, then each queued request in turn,
// and checks that each is answered 200.
func (f *busyFleet) serveInTurn(t *testing.T, first <-chan answer, waiting []<-chan answer) {
	t.Helper()
	f.release <- struct{}{}
	if c := (<-first).code; c != 200 {
		t.Errorf("occupant: %d", c)
	}
	for _, w := range waiting { // each queued request is served in turn
		<-f.entered
		f.release <- struct{}{}
		if c := (<-w).code; c != 200 {
			t.Errorf("queued request: %d; want 200", c)
		}
	}
}

// TestQueuedClientLeaves: a queued request whose client disconnects leaves
// the queue at once, while the replica is still busy, and never reaches it.
func TestQueuedClientLeaves(t *testing.T) {
	f := newBusyFleet(t, func(*testDeps) {})
	first := f.occupy(t)
	ctx, cancel := context.WithCancel(context.Background())
	gone := f.queue(ctx, t, "", "", "impatient")
	stays := f.queue(context.Background(), t, "", "", "patient")
	cancel()
	poll.Until(t, "the disconnected client's request to leave the queue", func() bool { return f.h.waiting() == 1 })
	if a := <-gone; a.code != -1 {
		t.Errorf("the cancelled client got %d; want its request cut", a.code)
	}
	select {
	case got := <-f.entered:
		t.Fatalf("replica got %q while busy", got)
	default:
	}
	f.release <- struct{}{}
	<-first
	if got := <-f.entered; got != "patient" {
		t.Errorf("replica got %q next; want the request still queued", got)
	}
	f.release <- struct{}{}
	if c := (<-stays).code; c != 200 {
		t.Errorf("queued request: %d", c)
	}
}

// TestPriorityHeader: X-Llmgw-Priority lowers a request's band, never
// raises it, and must be an integer. Arriving in the order lowered, plain,
// "raised", they are served plain, "raised", lowered: FIFO would serve the
// lowered one first, and a raise would serve the "raised" one first.
func TestPriorityHeader(t *testing.T) {
	f := newBusyFleet(t, func(*testDeps) {})
	first := f.occupy(t)
	var waiting []<-chan answer
	for _, r := range []struct{ priority, content string }{{"-1", "lowered"}, {"", "plain"}, {"5", "raised"}} {
		waiting = append(waiting, f.queue(context.Background(), t, "", r.priority, r.content))
	}
	bad := <-f.send(context.Background(), t, "", "urgent", "bad header")
	if bad.code != http.StatusBadRequest || !strings.Contains(openAIError(t, bad.body).Message, "X-Llmgw-Priority") {
		t.Errorf("a non-integer priority: %d %s; want a 400 naming the header", bad.code, bad.body)
	}
	var order []string
	f.release <- struct{}{}
	<-first
	for range waiting {
		order = append(order, <-f.entered)
		f.release <- struct{}{}
	}
	for _, w := range waiting {
		if c := (<-w).code; c != 200 {
			t.Errorf("queued request: %d", c)
		}
	}
	if fmt.Sprint(order) != "[plain raised lowered]" {
		t.Errorf("served %v; want [plain raised lowered]", order)
	}
	if m := f.most.Load(); m != 1 {
		t.Errorf("the replica had %d requests at once; its limit is 1", m)
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestPriorityBoundsAgree keeps the keys file's priority range to the
// bands admission serves: a wider range would be clamped without a word.
func TestPriorityBoundsAgree(t *testing.T) {
	if auth.MaxPriority != admission.MaxPriority || -auth.MaxPriority != admission.MinPriority {
		t.Errorf("keys file priorities -%d..%d, admission bands %d..%d", auth.MaxPriority, auth.MaxPriority, admission.MinPriority, admission.MaxPriority)
	}
}
