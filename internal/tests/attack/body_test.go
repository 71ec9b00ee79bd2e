package attack

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// filler is a body of a prefix, then one byte repeated, left bytes in all.
type filler struct {
	prefix []byte
	fill   byte
	left   int64
	chunk  []byte
}

func (f *filler) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.left)]
	n := copy(p, f.prefix)
	f.prefix = f.prefix[n:]
	for n < len(p) { // copied a chunk at a time: the attack must be fast
		if f.chunk == nil {
			f.chunk = bytes.Repeat([]byte{f.fill}, 64<<10)
		}
		n += copy(p[n:], f.chunk)
	}
	f.left -= int64(n)
	return n, nil
}

// oversizedBody: 64 MB against the 8 MiB max_body_bytes gets 413 once the
// cap is read, not after the whole body.
func oversizedBody(t *testing.T, r *router) {
	const size = 64 << 20
	line, took := rawPost(t, r.API, "/v1/completions", nil, size, &filler{prefix: []byte(`{"model":"sim-model","prompt":"`), fill: 'a', left: size})
	if !strings.Contains(line, " 413 ") {
		t.Errorf("answer %q; want 413", line)
	}
	t.Logf("BOUND oversized body: 64 MB body refused with %q after %s", line, took.Round(time.Millisecond))
}

// nestedBody: a megabyte of nested arrays is refused as malformed.
func nestedBody(t *testing.T, r *router) {
	for _, tt := range []struct{ name, body string }{
		{"arrays", `{"model":"sim-model","prompt":` + strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20) + `}`},
		{"objects", `{"model":"sim-model","messages":[{"role":"user","content":` + strings.Repeat(`{"a":`, 200_000) + `1` + strings.Repeat("}", 200_000) + `}]}`},
	} {
		start := time.Now()
		line, _ := rawPost(t, r.API, "/v1/chat/completions", nil, int64(len(tt.body)), strings.NewReader(tt.body))
		if !strings.Contains(line, " 400 ") && !strings.Contains(line, " 413 ") {
			t.Errorf("%s: answer %q; want 400", tt.name, line)
		}
		t.Logf("BOUND deeply nested body (%s, %d bytes): %q after %s", tt.name, len(tt.body), line, time.Since(start).Round(time.Millisecond))
	}
}

// trickle sends one byte every period until stop closes.
type trickle struct {
	period time.Duration
	stop   chan struct{}
}

func (tr trickle) Read(p []byte) (int, error) {
	select {
	case <-time.After(tr.period):
		p[0] = ' '
		return 1, nil
	case <-tr.stop:
		return 0, io.EOF
	}
}

// slowBody: a body trickled a byte every 200 ms is cut off with 408 after
// body_timeout.
func slowBody(t *testing.T, r *router) {
	stop := make(chan struct{})
	defer close(stop)
	line, took := rawPost(t, r.API, "/v1/completions", nil, 1<<20, trickle{period: 200 * time.Millisecond, stop: stop})
	if !strings.Contains(line, " 408 ") {
		t.Errorf("answer %q; want 408", line)
	}
	if took < bodyTimeout/2 || took > bodyTimeout+slack {
		t.Errorf("cut off after %s; want about the %s body_timeout", took, bodyTimeout)
	}
	t.Logf("BOUND slow body: cut off with %q after %s (body_timeout %s)", line, took.Round(time.Millisecond), bodyTimeout)
}
