package driver_test

import (
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// keyTask allocates a task whose environment is env (as a Nomad template
// with env = true leaves it) and encodes config.
func keyTask(t *testing.T, h *pluginhost.Host, env map[string]string, config map[string]any) *pluginhost.Task {
	t.Helper()
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{
		Name:  "shard",
		Ports: []*drivers.PortMapping{{Label: "http", Value: int32(netport.FreeTCP(t)), HostIp: "127.0.0.1"}},
		Env:   env,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	if err := h.EncodeTaskConfig(ctx(t), task, config); err != nil {
		t.Fatal(err)
	}
	return task
}

// TestEngineAPIKeyFromTaskEnv runs the real plugin with api_key_env naming
// a variable of the task's environment: the engine (vllm-sim, reading
// VLLM_API_KEY as vLLM does) then refuses /v1 requests without that key,
// the driver still sees the model ready (it polls the open /health), and
// the key is in the engine's environment but not on its command line. A
// task whose environment lacks the variable does not start, and the error
// says what to fix.
func TestEngineAPIKeyFromTaskEnv(t *testing.T) {
	const key = "engine-key-from-a-nomad-variable"
	h := launch(t, simBin)
	ev := watchEvents(t, h)
	task := keyTask(t, h, map[string]string{"ENGINE_KEY": key},
		map[string]any{"model": "sim", "api_key_env": "ENGINE_KEY", "args": []string{"--sim-latency=false"}})
	start(t, h, task.Config)
	ev.next(t, "model ready")

	pid := enginePid(t, h, task.Config.GetId())
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if !bytes.Contains(environ, []byte("\x00VLLM_API_KEY="+key+"\x00")) && !bytes.HasPrefix(environ, []byte("VLLM_API_KEY="+key+"\x00")) {
		t.Error("the engine's environment lacks VLLM_API_KEY from ENGINE_KEY")
	}
	if cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); bytes.Contains(cmdline, []byte(key)) {
		t.Errorf("the key is on the engine's command line: %q", cmdline)
	}
	url := engineURL(task) + "/v1/completions"
	body := `{"model":"sim","prompt":"hello","max_tokens":1}`
	for _, tt := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer " + key, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("completion with %q: %d; want %d", tt.auth, resp.StatusCode, tt.want)
		}
	}

	missing := keyTask(t, h, map[string]string{"OTHER": "x"},
		map[string]any{"model": "sim", "api_key_env": "ENGINE_KEY", "args": []string{"--sim-latency=false"}})
	_, err := h.Driver.StartTask(ctx(t), &drivers.StartTaskRequest{Task: missing.Config})
	if err == nil || !strings.Contains(err.Error(), "api_key_env: the task environment has no non-empty ENGINE_KEY") {
		t.Errorf("start without the variable: %v; want the api_key_env error", err)
	}
}
