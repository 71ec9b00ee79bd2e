package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
)

// rawConn dials addr and returns the connection and a reader on it.
func rawConn(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// closedWithin reads c until EOF or an error, and reports how long that
// took; it fails the test if the server keeps the connection past limit.
func closedWithin(t *testing.T, c net.Conn, r *bufio.Reader, limit time.Duration) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(r)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s; read %q", limit, b)
	}
	return string(b), took
}

// TestTimeouts: each timeout cuts what it bounds, set short here; none cuts
// before its time, and a stream lasting several times every timeout runs
// to its end.
func TestTimeouts(t *testing.T) {
	const d = 300 * time.Millisecond
	const slack = 15 * time.Second // a loaded machine; the bound is d
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			return // the router's scrapes
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 8 { // 8 x d/2: longer than every timeout
			fmt.Fprintf(w, "data: {\"i\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-time.After(d / 2):
			case <-r.Context().Done():
				return
			}
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer stream.Close()
	s := startWith(t, stream.Listener.Addr().String(), func(c *config.Config) {
		c.HTTP.ReadHeaderTimeout, c.HTTP.BodyTimeout, c.HTTP.WriteTimeout, c.HTTP.IdleTimeout = d, d, d, d
	})

	t.Run("trickled body gets 408", func(t *testing.T) {
		c, r := rawConn(t, s.Addr())
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(chat), chat[:5])
		got, took := closedWithin(t, c, r, slack)
		if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, "not received within 300ms") {
			t.Errorf("answer %q; want 408 naming the timeout", got)
		}
		if took < d/2 { // measured from after the write: some of d has passed
			t.Errorf("cut after %s, before the %s body timeout", took, d)
		}
		t.Logf("trickled body cut off after %s (body_timeout %s)", took, d)
	})
	t.Run("slow headers closed", func(t *testing.T) {
		c, r := rawConn(t, s.Addr())
		io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
		_, took := closedWithin(t, c, r, slack)
		t.Logf("slow headers cut off after %s (read_header_timeout %s)", took, d)
	})
	t.Run("idle keep-alive closed", func(t *testing.T) {
		c, r := rawConn(t, s.Addr())
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Fatalf("health: %d close=%t", resp.StatusCode, resp.Close)
		}
		_, took := closedWithin(t, c, r, slack)
		if took < d/2 {
			t.Errorf("idle connection closed after %s, before idle_timeout %s", took, d)
		}
		t.Logf("idle keep-alive closed after %s (idle_timeout %s)", took, d)
	})
	t.Run("long stream outlives every timeout", func(t *testing.T) {
		start := time.Now()
		resp, err := http.Post("http://"+s.Addr()+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Count(string(b), "data: {") != 8 {
			t.Fatalf("stream cut: %v %q", err, b)
		}
		if took := time.Since(start); took < 2*d {
			t.Fatalf("stream took %s; the test needs it longer than the timeouts", took)
		}
	})
}

// TestWriteTimeoutDropsStalledReader: a client that stops reading a stream
// is dropped after write_timeout, and the replica's request is cancelled.
func TestWriteTimeoutDropsStalledReader(t *testing.T) {
	cancelled := make(chan time.Duration, 1)
	var reached, written atomic.Int64 // the replica's requests, and bytes it wrote
	chunk := strings.Repeat("x", 64<<10)
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			return // the router's scrapes
		}
		reached.Add(1)
		start := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			n, err := fmt.Fprintf(w, "data: %s\n\n", chunk)
			written.Add(int64(n))
			if err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				break
			}
		}
		<-r.Context().Done()
		cancelled <- time.Since(start)
	}))
	defer stream.Close()
	const d = 300 * time.Millisecond
	s := startWith(t, stream.Listener.Addr().String(), func(c *config.Config) { c.HTTP.WriteTimeout = d })
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4096)
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Read nothing: the router's writes block once the buffers fill.
	select {
	case took := <-cancelled:
		if took < d {
			t.Errorf("dropped after %s, before write_timeout %s", took, d)
		}
		t.Logf("stalled reader dropped; replica request cancelled after %s (write_timeout %s)", took, d)
	case <-time.After(poll.Timeout):
		// Which half hung: the request's way to the replica, or the drop.
		t.Fatalf("replica request still running 30 s after the client stopped reading (the replica got %d requests and wrote %d bytes)",
			reached.Load(), written.Load())
	}
}

// TestHeaderCaps: more header fields than max_headers, or a header block
// over max_header_bytes, is answered 431.
func TestHeaderCaps(t *testing.T) {
	s := startWith(t, "127.0.0.1:1", func(c *config.Config) { c.HTTP.MaxHeaders, c.HTTP.MaxHeaderBytes = 20, 8<<10 })
	send := func(extra http.Header) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/health", nil)
		for k, v := range extra {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	many := http.Header{}
	for i := range 30 {
		many.Set(fmt.Sprintf("X-H%d", i), "v")
	}
	tests := []struct {
		name string
		h    http.Header
		code int
		msg  string
	}{
		{"few", http.Header{"X-A": {"1"}}, 200, ""},
		{"too many fields", many, 431, "at most 20"},
		{"repeated field", http.Header{"X-A": make([]string, 25)}, 431, "at most 20"},
		{"too many bytes", http.Header{"X-Big": {strings.Repeat("b", 16<<10)}}, 431, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, b := send(tt.h)
			if c != tt.code || !strings.Contains(b, tt.msg) {
				t.Errorf("%d %q; want %d with %q", c, b, tt.code, tt.msg)
			}
		})
	}
}

// TestConnectionCap: with max_connections 2, a third connection is not
// served while two are open, and is served once one closes.
func TestConnectionCap(t *testing.T) {
	s := startWith(t, "127.0.0.1:1", func(c *config.Config) { c.HTTP.MaxConnections = 2 })
	var held []net.Conn
	for range 2 {
		c, r := rawConn(t, s.Addr())
		io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("held connection: %v", err)
		}
		held = append(held, c)
	}
	c, r := rawConn(t, s.Addr())
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("a third connection was served while two were open")
	}
	held[0].Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if resp, err := http.ReadResponse(r, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("third connection after one closed: %v", err)
	}
}

// TestIngestTokenBeforeBody: an ingest post without the token is refused
// with 401 before its body is read: the router answers while the client is
// still sending, and closes the connection.
func TestIngestTokenBeforeBody(t *testing.T) {
	s := startWith(t, "127.0.0.1:1", nil)
	for _, path := range []string{kvwire.Path, "/v1/peer-load"} {
		t.Run(path, func(t *testing.T) {
			c, r := rawConn(t, s.IngestAddr())
			// Claim 60 MB, send 1 KB: an answer can only come before the body.
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Length: %d\r\n\r\n%s", path, 60<<20, strings.Repeat("x", 1024))
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "bearer token") {
				t.Errorf("%d %s; want 401", resp.StatusCode, b)
			}
		})
	}
}
