package driver

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
	"github.com/llmgw/llmgw/plugin/proto/structs"
)

// Fingerprint reports at once whether the engine binary is usable, then
// again every period, keeping the stream open: Nomad places vllm tasks only
// on nodes where the driver is detected and healthy.
func (d *Driver) Fingerprint(_ *drivers.FingerprintRequest, stream drivers.Driver_FingerprintServer) error {
	tick := time.NewTicker(d.opts.FingerprintPeriod)
	defer tick.Stop()
	var probe engineProbe
	// The first answer goes out at once, without running the engine (vLLM
	// takes seconds to print its version); the full one follows.
	if err := stream.Send(probe.fingerprint(stream.Context(), d.pluginConfig().Engine, false)); err != nil {
		return err
	}
	for {
		if err := stream.Send(probe.fingerprint(stream.Context(), d.pluginConfig().Engine, true)); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// engineProbe caches the engine's version per binary and modification time,
// so the periodic fingerprint does not run the engine every time.
type engineProbe struct {
	path    string
	modTime time.Time
	version string
}

var versionRE = regexp.MustCompile(`\bv?(\d+\.\d+(?:\.\d+)?(?:[.+\-][0-9A-Za-z.+\-]*)?)`)

// fingerprint checks the engine binary; with probe it also runs it for its
// version when the binary changed, else it reports the cached version.
func (p *engineProbe) fingerprint(ctx context.Context, engine string, probe bool) *drivers.FingerprintResponse {
	path, err := exec.LookPath(engine)
	if err != nil {
		return &drivers.FingerprintResponse{
			Health:            drivers.FingerprintResponse_UNDETECTED,
			HealthDescription: "engine binary " + engine + " not found",
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return &drivers.FingerprintResponse{
			Health:            drivers.FingerprintResponse_UNHEALTHY,
			HealthDescription: "engine binary " + path + ": " + err.Error(),
		}
	}
	if probe && (path != p.path || !fi.ModTime().Equal(p.modTime)) {
		p.path, p.modTime, p.version = path, fi.ModTime(), engineVersion(ctx, path)
	}
	attrs := map[string]*structs.Attribute{
		"driver.vllm":        {Value: &structs.Attribute_BoolVal{BoolVal: true}},
		"driver.vllm.engine": {Value: &structs.Attribute_StringVal{StringVal: path}},
	}
	if p.version != "" {
		attrs["driver.vllm.version"] = &structs.Attribute{Value: &structs.Attribute_StringVal{StringVal: p.version}}
	}
	return &drivers.FingerprintResponse{
		Attributes: attrs, Health: drivers.FingerprintResponse_HEALTHY, HealthDescription: "Healthy",
	}
}

// engineVersion runs `ENGINE --version` briefly and extracts a version.
func engineVersion(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		if m := versionRE.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}
