package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/server"
)

// fakeDriver speaks the driver's side of the KV protocol for one replica
// over a real ingest connection, as the driver's forwarder does: a
// snapshot, then deltas, and a snapshot of its current state whenever the
// router answers "snapshot required".
type fakeDriver struct {
	t       *testing.T
	ingest  string
	replica string
	epoch   uint64
	seq     uint64
	blocks  int // what the driver believes its replica holds
}

func (d *fakeDriver) send(u *kvwire.Update) error {
	u.Version, u.Driver, u.Epoch, u.Seq = kvwire.Version, "node-1", d.epoch, d.seq
	return kvwire.Send(context.Background(), http.DefaultClient, "http://"+d.ingest, token, u)
}

// snapshot sends the driver's whole state: blocks GPU blocks.
func (d *fakeDriver) snapshot() {
	d.t.Helper()
	d.epoch++
	d.seq = 0
	keys := make([]uint64, d.blocks)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	err := d.send(&kvwire.Update{Snapshot: true, Replicas: []kvwire.Replica{{ID: d.replica, BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}}}})
	if err != nil {
		d.t.Fatal(err)
	}
}

// flush sends the next (empty) delta and reports whether the router asked
// for a snapshot, which it then sends.
func (d *fakeDriver) flush() bool {
	d.t.Helper()
	d.seq++
	err := d.send(&kvwire.Update{})
	if errors.Is(err, kvwire.ErrSnapshotRequired) {
		d.snapshot()
		return true
	}
	if err != nil {
		d.t.Fatal(err)
	}
	return false
}

// smallAndLarge runs a router over two vllm-sim replicas with KV events:
// small/main advertises only 16 GPU blocks (--num-gpu-blocks-override),
// large/main the default, which keeps the model's key cap out of the way
// of an oversized small share. The router's warnings go to the log.
func smallAndLarge(t *testing.T) (*server.Server, *lockedLog) {
	t.Helper()
	small := startSim(t, "--sim-latency=false", "--num-gpu-blocks-override", "16", "--max-model-len", "256")
	large := startSim(t, "--sim-latency=false")
	c := routerConfig(token)
	c.Replicas = []config.StaticReplica{
		{ID: "small/main", Model: model, Address: small.addr, BlockSize: 16, KVEvents: true},
		{ID: "large/main", Model: model, Address: large.addr, BlockSize: 16, KVEvents: true},
	}
	logs := &lockedLog{t: t}
	return startRouterLogTo(t, c, logs), logs
}

// TestOversizeRepairWithSim: a router whose index holds 40 blocks of a
// vllm-sim replica advertising 16 (the driver's state missed removals)
// raises the alarm and repairs it: it asks the replica's driver for a
// fresh snapshot, whose true state (8 blocks) clears the alarm. (The rate
// limit is router/server's TestRepairRateLimited.)
func TestOversizeRepairWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	r, logs := smallAndLarge(t)
	oversized := fmt.Sprintf(`llmgw_replica_index_oversized{model=%q,replica="small/main",tier="gpu"}`, model)
	repairs := fmt.Sprintf(`llmgw_replica_index_resnapshots_total{model=%q,replica="small/main"}`, model)
	poll.Until(t, "the small replica's advertised capacity", func() bool {
		return metricValue(t, r, fmt.Sprintf(`llmgw_replica_kv_capacity_blocks{model=%q,replica="small/main",tier="gpu"}`, model)) == 16
	})

	d := &fakeDriver{t: t, ingest: r.IngestAddr(), replica: "small/main", blocks: 40}
	d.snapshot()
	poll.Until(t, "the oversize alarm", func() bool { return metricValue(t, r, oversized) == 1 })
	d.blocks = 8 // the engine's truth, which the next snapshot carries
	poll.Until(t, "the router to ask the driver for a snapshot", d.flush)
	poll.Until(t, "the alarm to clear", func() bool { d.flush(); return metricValue(t, r, oversized) == 0 })
	if got := metricValue(t, r, repairs); got != 1 {
		t.Errorf("resnapshots %v; want 1", got)
	}
	if l := logs.String(); !strings.Contains(l, "asked the replica's driver for a fresh snapshot") || !strings.Contains(l, "driver=node-1") {
		t.Errorf("no log line naming the driver asked for a snapshot; log:\n%s", l)
	}
	if m := metricValue(t, r, fmt.Sprintf(`llmgw_replica_index_blocks{model=%q,replica="small/main",tier="gpu"}`, model)); m != 8 {
		t.Errorf("index holds %v blocks of the small replica; want the snapshot's 8", m)
	}
}
