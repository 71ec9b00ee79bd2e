package driver_test

import (
	"os/exec"
	"strings"
	"testing"

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
		r, err := fp.Recv()
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
