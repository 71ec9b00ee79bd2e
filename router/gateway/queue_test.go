package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestQueueThen429: with one replica limited to one request in flight, a
// second request waits in the queue until the first ends and is then
// served; with no time to wait it gets 429.
func TestQueueThen429(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	slow := backend(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		io.WriteString(w, `{}`)
	})
	busyOne := func(timeout time.Duration) func(*testDeps, *scheduler.Config) {
		return func(d *testDeps, c *scheduler.Config) {
			d.Route.Options.QueueTimeout = timeout
			c.Filters = append(c.Filters, scheduler.Spec{Type: "busy", Params: []byte(`{"max_in_flight":1}`)})
		}
	}
	h := newHarnessWith(t, busyOne(time.Minute), slow)
	first := make(chan int)
	go func() { r, _ := post(t, h.srv.URL+"/v1/chat/completions", chatBody); first <- r.StatusCode }()
	<-entered
	second := make(chan int)
	go func() { r, _ := post(t, h.srv.URL+"/v1/chat/completions", chatBody); second <- r.StatusCode }()
	poll.Until(t, "the second request to queue", func() bool { return h.waiting() == 1 })
	select {
	case <-entered:
		t.Fatal("queued request reached the replica while it was at its limit")
	case c := <-second:
		t.Fatalf("queued request answered %d while the first was in flight", c)
	default:
	}
	release <- struct{}{}
	if c := <-first; c != 200 {
		t.Errorf("first: %d", c)
	}
	<-entered
	release <- struct{}{}
	if c := <-second; c != 200 {
		t.Errorf("second (queued): %d; want 200", c)
	}

	h2 := newHarnessWith(t, busyOne(0), slow)
	go func() { r, _ := post(t, h2.srv.URL+"/v1/chat/completions", chatBody); first <- r.StatusCode }()
	<-entered
	resp, b := post(t, h2.srv.URL+"/v1/chat/completions", chatBody)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("without a queue: %d; want 429", resp.StatusCode)
	}
	openAIError(t, b)
	release <- struct{}{}
	<-first
}

// TestSessionAffinity: requests carrying one session id stick to the
// replica that served the session's first request, whatever their prompts.
func TestSessionAffinity(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }
	h := newHarness(t, 1<<20, backend(t, ok), backend(t, ok), backend(t, ok))
	send := func(session string, i int) string {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/chat/completions",
			strings.NewReader(fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"turn %d"}]}`, i)))
		req.Header.Set("X-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get(HeaderReplica)
	}
	for _, session := range []string{"alice", "bob", "carol"} {
		home := send(session, 0)
		for i := 1; i < 6; i++ {
			if got := send(session, i); got != home {
				t.Fatalf("session %s turn %d went to %s; want %s", session, i, got, home)
			}
		}
	}
}
