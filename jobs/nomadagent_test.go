package jobs

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// TestNomadValidatesShipped: a real Nomad agent (a server alone, on free
// ports) accepts every shipped jobspec, their scaling policies included,
// and refuses a count outside a policy's bounds as the validator does.
// It needs the nomad binary: LLMGW_NOMAD_BIN names it, else it skips.
func TestNomadValidatesShipped(t *testing.T) {
	bin := os.Getenv("LLMGW_NOMAD_BIN")
	if bin == "" || testing.Short() {
		t.Skip("LLMGW_NOMAD_BIN is unset (or -short): no nomad binary to start an agent with")
	}
	addr := startNomadServer(t, bin)
	validate := func(path string) (string, error) {
		cmd := exec.Command(bin, "job", "validate", path)
		cmd.Env = append(os.Environ(), "NOMAD_ADDR="+addr)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, f := range shipped(t) {
		out, err := validate(f)
		if err != nil || !strings.Contains(out, "Job validation successful") || strings.Contains(out, "not validated") {
			t.Errorf("nomad job validate %s on the agent: %v\n%s", f, err, out)
		}
	}
	src, err := os.ReadFile("llama-3.1-8b.nomad.hcl")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "    count = 2\n", "    count = 12\n", 1)
	path := filepath.Join(t.TempDir(), "over.nomad.hcl")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := validate(path); err == nil || !strings.Contains(out, "maximum count in scaling policy") {
		t.Errorf("count over the policy's max: nomad said %v\n%s", err, out)
	}
	if p := Validate(path, []byte(bad)); len(p) != 1 || !strings.Contains(p[0].Message, "outside the scaling bounds") {
		t.Errorf("count over the policy's max: the validator said %v", p)
	}
}

// startNomadServer runs a single Nomad server (no client: it schedules
// nothing) until the test ends and returns its HTTP address once it has
// elected itself leader.
func startNomadServer(t *testing.T, bin string) string {
	t.Helper()
	ports, err := netport.FreeTCPs(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\nadvertise {\n  http = \"127.0.0.1\"\n  rpc = \"127.0.0.1\"\n  serf = \"127.0.0.1\"\n}\n", ports[0], ports[1], ports[2])
	if err := os.WriteFile(filepath.Join(dir, "agent.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "agent", "-server", "-bootstrap-expect", "1", "-bind", "127.0.0.1",
		"-data-dir", filepath.Join(dir, "data"), "-config", filepath.Join(dir, "agent.hcl"))
	log, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start nomad agent: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		log.Close()
	})
	addr := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	elected := poll.Within(2*time.Minute, func() bool {
		resp, err := http.Get(addr + "/v1/status/leader")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b [64]byte
		n, _ := resp.Body.Read(b[:])
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b[:n]), ":")
	})
	if !elected {
		out, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		t.Fatalf("the nomad server at %s elected no leader within 2m; its log:\n%s", addr, out)
	}
	return addr
}
