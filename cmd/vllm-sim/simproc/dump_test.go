package simproc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestReadDump reads a real simulator's cache after one completion: full
// blocks of the configured size, chained from a first block.
func TestReadDump(t *testing.T) {
	sim, err := Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(context.Background(), Options{Binary: sim, Args: []string{"m", "--host", "127.0.0.1", "--port", "0",
		"--sim-latency=false", "--block-size", "4"}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	body := `{"model":"m","prompt":"` + strings.Repeat("one two three four ", 8) + `","max_tokens":1}`
	resp, err := http.Post(p.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	d, err := ReadDump(context.Background(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d.BlockSize != 4 || len(d.Blocks) == 0 {
		t.Fatalf("dump: block size %d, %d blocks; want size 4 and some blocks", d.BlockSize, len(d.Blocks))
	}
	firsts := 0
	for _, b := range d.Blocks {
		if len(b.TokenIDs) != 4 || b.Medium != "GPU" {
			t.Errorf("block %+v; want 4 tokens on the GPU", b)
		}
		if b.Parent == nil {
			firsts++
		}
	}
	if firsts != 1 {
		t.Errorf("%d blocks without a parent; want one chain", firsts)
	}
}

func TestReadDumpNamesBadAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad/debug/kv/blocks" {
			w.Write([]byte("{not json"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	tests := []struct{ url, want string }{
		{srv.URL, "404 Not Found"},
		{srv.URL + "/bad", "decode vllm-sim dump"},
	}
	for _, tt := range tests {
		if _, err := ReadDump(context.Background(), tt.url); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadDump(%s) = %v; want an error naming %q", tt.url, err, tt.want)
		}
	}
}
