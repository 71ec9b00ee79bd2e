package kvwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// header is an Update's fields up to its Replicas array, ready for an
// array of n replicas.
func header(n int) []byte {
	b := []byte{0x96, Version, 0xa1, 'n', 0x01, 0x01, 0xc3, 0xdd}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// oneReplica wraps groups (an array32 of n, then body) in one replica.
func oneReplica(n int, body []byte) []byte {
	b := append(header(1), 0x94, 0xa1, 'r', 0x10, 0xc2, 0xdd)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return append(b, body...)
}

// allocated is the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeAmplification: bodies whose claimed lengths, or whose decoded
// form, are far larger than their bytes are refused with an error naming
// the problem, allocating a small fraction of what they claim.
func TestDecodeAmplification(t *testing.T) {
	const mb = 1 << 20
	emptyGroup := []byte{0x94, 0x00, 0x01, 0xc0, 0xc0} // 5 bytes -> a 64-byte Group
	smallKeys := append([]byte{0x94, 0x00, 0x01, 0xdd, 0, 0x10, 0, 0}, bytes.Repeat([]byte{0x05}, mb)...)
	smallKeys = append(smallKeys, 0xc0)
	tests := []struct {
		name     string
		body     []byte
		msg      string
		maxAlloc uint64 // bytes Decode may allocate
	}{
		{"ten million replicas claimed in 12 bytes", header(10_000_000), "exceeds the", 64 << 10},
		{"a four-billion-key group", oneReplica(1, []byte{0x94, 0x00, 0x01, 0xdd, 0xff, 0xff, 0xff, 0xff}), "exceeds the", 64 << 10},
		{"a 2 GB driver id", append([]byte{0x96, Version, 0xdb, 0x7f, 0xff, 0xff, 0xff}, 'x'), "exceeds the", 64 << 10},
		{"a million nil groups", oneReplica(mb, bytes.Repeat([]byte{0xc0}, mb)), "over 4 times", 64 << 10},
		{"200k empty groups", oneReplica(200_000, bytes.Repeat(emptyGroup, 200_000)), "over 4 times", 64 << 10},
		{"a million one-byte keys", oneReplica(1, smallKeys), "over 4 times", 64 << 10},
		{"nested 10000 deep", append(header(1), bytes.Repeat([]byte{0x91}, 10000)...), "nesting deeper", 64 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Decode(tt.body) })
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %v; want ErrMalformed with %q", err, tt.msg)
			}
			if n > tt.maxAlloc {
				t.Errorf("Decode of %d bytes allocated %d bytes; want at most %d", len(tt.body), n, tt.maxAlloc)
			}
			t.Logf("%d-byte body refused, %d bytes allocated: %v", len(tt.body), n, err)
		})
	}
}

// TestDecodeRealUpdateWithinBound: a large real snapshot decodes, holding
// less than the amplification bound.
func TestDecodeRealUpdateWithinBound(t *testing.T) {
	keys := make([]uint64, 200_000)
	for i := range keys {
		keys[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	u := update(1, true, Replica{ID: "a/1", BlockSize: 16, Groups: []Group{{Tier: TierGPU, Add: keys}, {Rank: 1, Tier: TierCPU, Add: keys[:10]}}})
	b := mustEncode(t, u)
	var got *Update
	var err error
	n := allocated(func() { got, err = Decode(b) })
	if err != nil || len(got.Replicas[0].Groups[0].Add) != len(keys) {
		t.Fatalf("decode: %v", err)
	}
	if ratio := float64(n) / float64(len(b)); ratio > maxAmplification {
		t.Errorf("a %d-byte snapshot allocated %d bytes decoding (%.1fx)", len(b), n, ratio)
	}
	t.Logf("%d-byte snapshot of %d keys decoded with %d bytes allocated (%.2fx)", len(b), len(keys), n, float64(n)/float64(len(b)))
}

// stalledBody is a request body that sends nothing until done: a handler
// that reads it blocks, one that does not answers at once.
type stalledBody struct{ done chan struct{} }

func (s stalledBody) Read([]byte) (int, error) {
	<-s.done
	return 0, io.ErrUnexpectedEOF
}

// TestTokenCheckedBeforeBody: without the token the receiver answers 401
// without reading a byte of the body, and a declared body over MaxBody is
// refused with 413 unread.
func TestTokenCheckedBeforeBody(t *testing.T) {
	t.Parallel()
	r, err := NewReceiver("secret", &Mirror{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()
	tests := []struct {
		name, auth string
		length     int64
		code       int
	}{
		{"no token", "", 60 << 20, http.StatusUnauthorized},
		{"wrong token", "Bearer nope", 60 << 20, http.StatusUnauthorized},
		{"declared over MaxBody", "Bearer secret", MaxBody + 1, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := stalledBody{done: make(chan struct{})}
			defer close(body.done)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, io.NopCloser(io.MultiReader(strings.NewReader("x"), body)))
			req.ContentLength = tt.length
			req.Header.Set("Authorization", tt.auth)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.code || !resp.Close {
				t.Errorf("%d close=%t %s; want %d and the connection closed", resp.StatusCode, resp.Close, b, tt.code)
			}
		})
	}
}
