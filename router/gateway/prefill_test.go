package gateway

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/load"
)

// TestPrefillCountedUntilFirstByte: a request's uncached prompt tokens count
// as prefill queued on its replica from the moment it is sent until the
// replica's first body byte (vLLM streams nothing before the prompt is
// prefilled), while the request itself stays in flight until it ends.
func TestPrefillCountedUntilFirstByte(t *testing.T) {
	firstByte, finish := make(chan struct{}), make(chan struct{})
	h := newHarnessB(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // headers only: still prefilling
		<-firstByte
		_, _ = io.WriteString(w, "data: {}\n\n")
		w.(http.Flusher).Flush()
		<-finish
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	loadOf := func() load.Load { return h.tracker.Load("r0") }
	// A failed check must not leave the handler blocked, or closing the
	// test server waits for it forever; cleanups run last-in first-out,
	// so these run before the harness closes its server.
	release, done := sync.OnceFunc(func() { close(firstByte) }), sync.OnceFunc(func() { close(finish) })
	t.Cleanup(func() { release(); done() })

	resp, err := http.Post(h.srv.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"m","prompt":"`+strings.Repeat("tell me more ", 40)+`","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sent := loadOf()
	if sent.InFlight != 1 || sent.PrefillTokens <= 0 || sent.PrefillTokens != sent.InFlightTokens {
		t.Fatalf("before the first byte: load %+v; want 1 in flight, all its prompt tokens (nothing cached) queued for prefill", sent)
	}

	release()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the prefill to be released", func() bool { return loadOf().PrefillTokens == 0 })
	if l := loadOf(); l.InFlight != 1 || l.InFlightTokens != sent.InFlightTokens {
		t.Errorf("after the first byte: load %+v; want the request still in flight", l)
	}

	done()
	_, _ = io.Copy(io.Discard, resp.Body)
	poll.Until(t, "the request to end", func() bool { return loadOf() == load.Load{} })
}
