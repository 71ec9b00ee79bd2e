package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/route"
)

// TestPDOtherAPIsPrefillOnTheDecodeReplica: a Messages request to a model
// with prefill and decode replicas is not split in two steps (the API has
// no kv_transfer_params to carry the prefill's blocks): the decode
// replica gets the client's request as it came, on its own path, and
// the path is counted as api_without_kv_transfer.
func TestPDOtherAPIsPrefillOnTheDecodeReplica(t *testing.T) {
	h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RoleDecode)
	body := `{"model":"m","max_tokens":20,"messages":[{"role":"user","content":"` + pdPrompt + `"}]}`
	resp, err := http.Post(h.srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	pre, _ := h.engines["p0"].requests()
	dec, _ := h.engines["d0"].requests()
	if len(pre) != 0 || len(dec) != 1 {
		t.Fatalf("prefill got %d requests, decode %d; want the decode replica alone", len(pre), len(dec))
	}
	if dec[0]["kv_transfer_params"] != nil || dec[0]["max_tokens"] != 20.0 {
		t.Errorf("decode replica got %v; want the client's request", dec[0])
	}
	if got := h.pdPath(route.PDOtherAPI); got != 1 {
		t.Errorf("api_without_kv_transfer counted %g; want 1", got)
	}
	if got := h.pdPath(route.PDRemote); got != 0 {
		t.Errorf("remote prefills counted %g; want 0", got)
	}
}
