package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/router/config"
)

// TestUtilityPathsOnVLLMSim: /tokenize, /detokenize and /version through
// a router in front of a real vllm-sim answer exactly what the engine
// answers itself.
func TestUtilityPathsOnVLLMSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a vllm-sim process")
	}
	s := startSim(t, "--sim-latency=false")
	c := routerConfig("")
	c.Replicas = append(c.Replicas, config.StaticReplica{ID: "a/main", Model: model, Address: s.addr, BlockSize: 16})
	r := startRouter(t, c)
	tokenize := `{"model":"` + model + `","prompt":"the quick brown fox jumps over the lazy dog"}`
	direct := send(t, "POST", "http://"+s.addr+"/tokenize", tokenize)
	routed := send(t, "POST", "http://"+r.Addr()+"/tokenize", tokenize)
	if !bytes.Equal(compact(t, direct), compact(t, routed)) {
		t.Errorf("/tokenize through the router:\n%s\nthe engine itself:\n%s", routed, direct)
	}
	var tok struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(routed, &tok); err != nil || len(tok.Tokens) == 0 {
		t.Fatalf("tokenize answer %s (%v)", routed, err)
	}
	ids, _ := json.Marshal(tok.Tokens)
	detok := `{"model":"` + model + `","tokens":` + string(ids) + `}`
	if d, rt := send(t, "POST", "http://"+s.addr+"/detokenize", detok), send(t, "POST", "http://"+r.Addr()+"/detokenize", detok); !bytes.Equal(compact(t, d), compact(t, rt)) {
		t.Errorf("/detokenize through the router:\n%s\nthe engine itself:\n%s", rt, d)
	}
	if d, rt := send(t, "GET", "http://"+s.addr+"/version", ""), send(t, "GET", "http://"+r.Addr()+"/version", ""); !bytes.Equal(compact(t, d), compact(t, rt)) {
		t.Errorf("/version through the router: %s; the engine itself: %s", rt, d)
	}
}

// send makes one request and returns its 200 body.
func send(t *testing.T, method, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return b
}

// compact is b as compact JSON, so answers compare by content.
func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return out.Bytes()
}
