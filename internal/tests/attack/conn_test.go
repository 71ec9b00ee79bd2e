package attack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleConnections: twice max_connections silent connections are all
// closed; each one accepted goes after read_header_timeout, the rest wait
// in the kernel's queue meanwhile, and none is kept.
func idleConnections(t *testing.T, r *router) {
	const n = 2 * maxConns
	start := time.Now()
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	errs := make([]error, n)
	for i := range n {
		c, err := net.Dial("tcp", r.API) // the kernel completes it, accepted or not
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(slack + 2*headerTimeout))
			_, err := c.Read(make([]byte, 1))
			took[i], errs[i] = time.Since(start), err
		}()
	}
	wg.Wait()
	var last time.Duration
	for i, err := range errs {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection %d still open after %s", i, took[i])
		}
		last = max(last, took[i])
	}
	if last < headerTimeout/2 {
		t.Errorf("idle connections closed after %s, before read_header_timeout %s", last, headerTimeout)
	}
	t.Logf("BOUND idle connections: %d silent connections (max_connections %d) all closed within %s (read_header_timeout %s each)", n, maxConns, last.Round(time.Millisecond), headerTimeout)

	// A kept-alive connection that goes quiet after a request is closed
	// after idle_timeout.
	c, err := net.Dial("tcp", r.API)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: attack\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	idleStart := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(idleTimeout + slack))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("data after the response")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("kept-alive connection still open after %s", time.Since(idleStart))
	}
	t.Logf("BOUND idle keep-alive: closed after %s (idle_timeout %s)", time.Since(idleStart).Round(time.Millisecond), idleTimeout)
}

// headerFlood: more header fields than max_headers, and a header block
// over max_header_bytes, are refused with 431.
func headerFlood(t *testing.T, r *router) {
	many := http.Header{}
	for i := range 2000 {
		many.Set(fmt.Sprintf("X-F%d", i), "v")
	}
	for _, tt := range []struct {
		name string
		h    http.Header
	}{
		{"2000 fields", many},
		{"1 MB field", http.Header{"X-Big": {strings.Repeat("b", 1<<20)}}},
	} {
		start := time.Now()
		if c := status(t, "GET", "http://"+r.API+"/health", tt.h, ""); c != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("%s: %d; want 431", tt.name, c)
		}
		t.Logf("BOUND header flood (%s): 431 after %s", tt.name, time.Since(start).Round(time.Millisecond))
	}
}

// sessionIDs: an id over 128 bytes is refused with 400; a thousand
// requests with distinct ids at the cap are served and remembered within
// the scheduler's max_sessions.
func sessionIDs(t *testing.T, r *router) {
	body := `{"model":"sim-model","prompt":"hello","max_tokens":1}`
	for _, n := range []int{129, 32 << 10} {
		if c := status(t, "POST", "http://"+r.API+"/v1/completions", http.Header{"X-Session-Id": {strings.Repeat("s", n)}}, body); c != 400 {
			t.Errorf("%d-byte session id: %d; want 400", n, c)
		}
	}
	const n, workers = 1000, 8
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				req, _ := http.NewRequest("POST", "http://"+r.API+"/v1/completions", strings.NewReader(body))
				req.Header.Set("X-Session-Id", fmt.Sprintf("%0128d", i))
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					bad++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if bad > 0 {
		t.Errorf("%d of %d requests with 128-byte session ids failed", bad, n)
	}
	t.Logf("BOUND huge session ids: >128 bytes refused with 400; %d distinct 128-byte ids served in %s", n, time.Since(start).Round(time.Millisecond))
}
