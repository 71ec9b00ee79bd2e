package server

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/peers"
	"github.com/llmgw/llmgw/router/respstore"
)

// TestPeerToken: the ingest listener's router-to-router paths take
// peer_token and refuse the drivers' kv_token with 401, and the drivers'
// path refuses peer_token: neither credential speaks for the other.
func TestPeerToken(t *testing.T) {
	s := startWith(t, "127.0.0.1:1", nil)
	base := "http://" + s.IngestAddr()
	peerLoad := `{"version":2,"router":"other/1","seq":1,"replicas":[]}`
	tests := []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"kv token on peer load", "POST", peers.Path, "tok", peerLoad, http.StatusUnauthorized},
		{"kv token on conversation fetch", "GET", respstore.PeerPath + "resp_x?tenant=a", "tok", "", http.StatusUnauthorized},
		{"kv token on conversation delete", "DELETE", respstore.PeerPath + "resp_x?tenant=a", "tok", "", http.StatusUnauthorized},
		{"peer token on KV updates", "POST", kvwire.Path, "peer-tok", "", http.StatusUnauthorized},
		{"peer token on peer load", "POST", peers.Path, "peer-tok", peerLoad, http.StatusNoContent},
		{"peer token on conversation fetch", "GET", respstore.PeerPath + "resp_x?tenant=a", "peer-tok", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, tt.method, base+tt.path, "Bearer "+tt.token, tt.body)
			if code != tt.want {
				t.Errorf("%s %s: %d %s; want %d", tt.method, tt.path, code, body, tt.want)
			}
		})
	}
}

// TestKVTokenAlonePeersOff: a config from before peer_token, with only
// kv_token, serves no router-to-router path and says why at start, naming
// the setting that turns peer sharing back on.
func TestKVTokenAlonePeersOff(t *testing.T) {
	c := testConfig()
	c.PeerToken = ""
	var logs lockedBuffer
	s, err := Start(context.Background(), c, hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: &logs}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if got := logs.String(); !strings.Contains(got, "peer sharing is off") || !strings.Contains(got, "peer_token (LLMGW_PEER_TOKEN)") {
		t.Errorf("start logged %q; want a warning naming peer_token", got)
	}
	base := "http://" + s.IngestAddr()
	for _, path := range []string{peers.Path, respstore.PeerPath + "resp_x?tenant=a"} {
		if code, body := do(t, "POST", base+path, "Bearer tok", `{}`); code != http.StatusNotFound {
			t.Errorf("POST %s with kv_token: %d %s; want 404 (peer sharing off)", path, code, body)
		}
	}
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
