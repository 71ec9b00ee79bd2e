package fleet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// TestStartFailsCleanly: a shard whose engine cannot start fails Start
// with the engine's own message, and nothing started before is left.
func TestStartFailsCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and the driver")
	}
	o := options(t)
	o.Shards, o.Routers = 2, 1
	o.SimArgs = []string{"--max-num-seqs", "many"}
	f, err := Start(context.Background(), o)
	if err == nil {
		f.Close()
		t.Fatal("Start with a broken engine flag succeeded")
	}
	if !strings.Contains(err.Error(), "engine exited") || !strings.Contains(err.Error(), `--max-num-seqs: not an integer: "many"`) {
		t.Errorf("error %q; want the engine's exit and its complaint about the flag", err)
	}
	fleettest.CheckNone(t, o.WorkDir)
	goleak.VerifyNone(t)
}

// TestStartCancelled: cancelling Start's context (Ctrl-C in the CLI) while
// routers start stops everything already running, and Start says why.
func TestStartCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver and shards")
	}
	o := options(t)
	o.Shards, o.Routers = 1, 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Log = hclog.New(&hclog.LoggerOptions{Output: cancelOn{"starting routers", cancel}, Level: hclog.Info})
	f, err := Start(ctx, o)
	if err == nil {
		f.Close()
		t.Fatal("Start succeeded after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v; want context.Canceled", err)
	}
	fleettest.CheckNone(t, o.WorkDir)
	goleak.VerifyNone(t)
}

// cancelOn cancels when a log line contains msg: a deterministic point in
// Start at which to pull the plug.
type cancelOn struct {
	msg    string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.msg) {
		c.cancel()
	}
	return len(p), nil
}
