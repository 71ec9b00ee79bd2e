package driver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestPrefillAndDecodeTasks runs a prefill task and a decode task of
// vllm-sim under the real plugin: the driver gives each engine vLLM's
// --kv-transfer-config and the side channel on the port Nomad allocated,
// so a prefill step's answer names that port and the decode step pulls
// from it.
func TestPrefillAndDecodeTasks(t *testing.T) {
	h := launch(t, simBin)
	run := func(role string) (*pluginhost.Task, int) {
		side := netport.FreeTCP(t)
		task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{Name: role, Ports: []*drivers.PortMapping{
			{Label: "http", Value: int32(netport.FreeTCP(t)), HostIp: "127.0.0.1"},
			{Label: "nixl", Value: int32(side), HostIp: "127.0.0.1"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(task.Close)
		if err := h.EncodeTaskConfig(ctx(t), task, map[string]any{"model": "sim", "role": role,
			"args": []string{"--sim-latency=false"}}); err != nil {
			t.Fatal(err)
		}
		start(t, h, task.Config)
		poll.Until(t, role+" engine to serve", func() bool {
			resp, err := http.Get(engineURL(task) + "/health")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil && resp.StatusCode == http.StatusOK
		})
		return task, side
	}
	p, side := run("prefill")
	d, _ := run("decode")

	prompt := make([]int, 40)
	for i := range prompt {
		prompt[i] = 100 + i
	}
	var pre struct {
		KV map[string]any `json:"kv_transfer_params"`
	}
	postJSON(t, engineURL(p)+"/v1/completions", map[string]any{"model": "sim", "prompt": prompt, "max_tokens": 1,
		"kv_transfer_params": map[string]any{"do_remote_decode": true}}, &pre)
	if pre.KV["remote_port"] != float64(side) || pre.KV["remote_host"] != "127.0.0.1" {
		t.Fatalf("prefill answered kv_transfer_params %v; want the side channel on 127.0.0.1:%d", pre.KV, side)
	}
	var dec struct {
		Usage struct {
			Details struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	postJSON(t, engineURL(d)+"/v1/completions", map[string]any{"model": "sim", "prompt": prompt, "max_tokens": 4,
		"kv_transfer_params": pre.KV}, &dec)
	if dec.Usage.Details.Cached != len(prompt)-1 {
		t.Errorf("decode cached_tokens %d, want %d: the prompt's KV pulled from the prefill task", dec.Usage.Details.Cached, len(prompt)-1)
	}
}

func postJSON(t *testing.T, url string, body, out any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e bytes.Buffer
		_, _ = e.ReadFrom(resp.Body)
		t.Fatalf("POST %s: %s: %s", url, strconv.Quote(resp.Status), e.String())
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
}
