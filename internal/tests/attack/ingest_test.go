package attack

import (
	"bytes"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// unauthenticatedIngest: four concurrent 50 MB posts without the token are
// answered 401 before their bodies are read.
func unauthenticatedIngest(t *testing.T, r *router) {
	const size = 50 << 20
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := map[string]string{"Authorization": "Bearer guess"}
			if i%2 == 1 {
				h = nil
			}
			line, took, err := post(r.Ingest, kvwire.Path, h, size, &filler{fill: 0xc0, left: size})
			if err != nil || !strings.Contains(line, " 401 ") {
				t.Errorf("answer %q (%v); want 401", line, err)
			}
			t.Logf("BOUND unauthenticated ingest: 50 MB body answered %q after %s", line, took.Round(time.Millisecond))
		}()
	}
	wg.Wait()
	line, _ := rawPost(t, r.Ingest, "/v1/peer-load", nil, size, &filler{fill: ' ', left: size})
	if !strings.Contains(line, " 401 ") {
		t.Errorf("peer load: answer %q; want 401", line)
	}
}

// amplifyingMsgpack: with the token, a body whose claimed lengths are
// far beyond its bytes, and one that would decode to 64 times its size,
// are refused as malformed.
func amplifyingMsgpack(t *testing.T, r *router) {
	head := func(n int) []byte {
		b := []byte{0x96, kvwire.Version, 0xa1, 'n', 0x01, 0x01, 0xc3, 0x91, 0x94, 0xa5, 's', 'i', 'm', '/', '1', 0x10, 0xc2, 0xdd}
		return binary.BigEndian.AppendUint32(b, uint32(n))
	}
	const n = 8 << 20
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"a billion groups claimed in 22 bytes", head(1 << 30), "exceeds the"},
		{"8 MB of nil groups (512 MB decoded)", append(head(n), bytes.Repeat([]byte{0xc0}, n)...), "over 4 times"},
	} {
		start := time.Now()
		req, _ := http.NewRequest("POST", "http://"+r.Ingest+kvwire.Path, bytes.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+kvToken)
		resp, err := noKeepAlive.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: %d %s; want 400 naming %q", tt.name, resp.StatusCode, b, tt.want)
		}
		t.Logf("BOUND amplifying msgpack (%s): %d after %s: %s", tt.name, resp.StatusCode, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(b)))
	}
}
