package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
)

// TestStatusPageShowsRouterState: the page on the admin listener shows the
// static replica, its mode and why, a routed request in the decision log,
// and the engine's hit rate since the router's first scrape (the backend's
// counters grow by 1000 queried and 250 hit tokens a scrape: 25%).
func TestStatusPageShowsRouterState(t *testing.T) {
	var scrapes atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			n := scrapes.Add(1)
			fmt.Fprintf(w, "vllm:num_requests_running 0\nvllm:prefix_cache_queries_total %d\nvllm:prefix_cache_hits_total %d\n", 1000*n, 250*n)
			return
		}
		io.WriteString(w, `{}`)
	}))
	defer backend.Close()
	s := startWith(t, backend.Listener.Addr().String(), func(c *config.Config) { c.ScrapeInterval = 20 * time.Millisecond })
	page := "http://" + s.AdminAddr() + StatusPath

	code, body := get(t, page)
	if code != 200 || !strings.Contains(body, "No routed requests yet.") {
		t.Fatalf("before any request: %d, decision log not empty:\n%s", code, body)
	}
	resp, err := http.Post("http://"+s.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(chat))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	var last string
	poll.Until(t, "the page to show the engine's hit rate", func() bool {
		_, last = get(t, page)
		return strings.Contains(last, "25.0% / ")
	})
	for _, want := range []string{
		`data-replica="a/1" data-mode="approx"`,
		"it advertises KV events but no driver session holds its state",
		`<tr class="decision">`, "the only candidate",
		"<td>total</td>", // the overhead table's total stage
		`id="queue-depth">0</b>`,
	} {
		if !strings.Contains(last, want) {
			t.Errorf("page lacks %q:\n%s", want, last)
		}
	}
	if c, b := get(t, page+"?refresh=0"); c != http.StatusBadRequest || !strings.Contains(b, "from 1 to 3600") {
		t.Errorf("refresh=0: %d %s; want 400 naming the range", c, b)
	}
}
