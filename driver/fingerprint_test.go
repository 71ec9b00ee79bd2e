package driver_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

func TestPluginIdentity(t *testing.T) {
	h := launch(t, simBin)
	info, err := h.Base.PluginInfo(ctx(t), &base.PluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pluginhost.CheckPluginInfo(info); err != nil || info.GetName() != "vllm" {
		t.Errorf("plugin info %v: %v", info, err)
	}
	caps, err := h.Driver.Capabilities(ctx(t), &drivers.CapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if c := caps.GetCapabilities(); !c.GetSendSignals() || !c.GetExec() || c.GetFsIsolation() != drivers.DriverCapabilities_NONE {
		t.Errorf("capabilities %v", c)
	}
	// The validation-phase calls: no nomad_config, twice.
	for range 2 {
		if err := h.SetConfig(ctx(t), map[string]any{"engine": "vllm", "kv_flush_interval": "1s"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.SetConfig(ctx(t), map[string]any{"kv_flush_interval": "soon"}, nil); err == nil || !strings.Contains(err.Error(), "kv_flush_interval") {
		t.Errorf("bad plugin config: got %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	out, err := exec.Command(simBin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(out))
	tests := []struct {
		engine  string
		health  drivers.FingerprintResponse_HealthState
		version string
	}{
		{simBin, drivers.FingerprintResponse_HEALTHY, version},
		{"/nonexistent/vllm", drivers.FingerprintResponse_UNDETECTED, ""},
	}
	for _, tt := range tests {
		h := launch(t, tt.engine)
		fp, err := h.Driver.Fingerprint(ctx(t), &drivers.FingerprintRequest{})
		if err != nil {
			t.Fatal(err)
		}
		first, err := fp.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if first.GetHealth() != tt.health {
			t.Errorf("%s: first health %v; want %v", tt.engine, first.GetHealth(), tt.health)
		}
		r, err := fp.Recv() // the one with the engine's version
		if err != nil {
			t.Fatal(err)
		}
		if r.GetHealth() != tt.health {
			t.Errorf("%s: health %v (%s); want %v", tt.engine, r.GetHealth(), r.GetHealthDescription(), tt.health)
		}
		if got := r.GetAttributes()["driver.vllm.version"].GetStringVal(); got != tt.version {
			t.Errorf("%s: version %q; want %q", tt.engine, got, tt.version)
		}
	}
}

// TestHandshakeLine checks the first stdout line Nomad's client parses:
// core version 1, app version 2, a unix socket, gRPC, no certificate; and
// that without the magic cookie the binary refuses to serve.
func TestHandshakeLine(t *testing.T) {
	cmd := exec.Command(pluginBin)
	cmd.Env = append(os.Environ(), "NOMAD_PLUGIN_MAGIC_COOKIE=e4327c2e01eabfd75a8a67adb114fb34a757d57eee7728d857a8cec6e91a7255",
		"PLUGIN_PROTOCOL_VERSIONS=2", "PLUGIN_MIN_PORT=0", "PLUGIN_MAX_PORT=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^1\|2\|unix\|/[^|]+\|grpc\|\n$`).MatchString(line) {
		t.Errorf("handshake line %q", line)
	}

	plain := exec.Command(pluginBin)
	plain.Env = []string{"PATH=" + os.Getenv("PATH")}
	b, err := plain.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "plugin") {
		t.Errorf("without the cookie: err %v, output %q; want a refusal", err, b)
	}
}

// TestAgentStartupSequence plays the three plugin processes a Nomad agent
// starts: one to fingerprint the binary (PluginInfo, ConfigSchema, killed),
// one to validate the config (SetConfig twice without nomad_config,
// killed), then the long-lived one. A missing engine binary is a plain,
// unrecoverable start error.
func TestAgentStartupSequence(t *testing.T) {
	c := ctx(t)
	fp, err := pluginhost.Launch(pluginBin, pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Base.PluginInfo(c, &base.PluginInfoRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Base.ConfigSchema(c, &base.ConfigSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	fp.Close()
	validate, err := pluginhost.Launch(pluginBin, pluginhost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := validate.SetConfig(c, map[string]any{"engine": "/nonexistent/vllm"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	validate.Close()

	h := launch(t, "/nonexistent/vllm")
	task := newTask(t, h, map[string]any{"model": "m"})
	_, err = h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if err == nil || plugin.IsRecoverable(err) || !strings.Contains(err.Error(), "/nonexistent/vllm") {
		t.Errorf("start with a missing engine: %v; want an unrecoverable error naming it", err)
	}
}
