package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// topoOrders returns every order of parts that builds each after the
// parts it needs.
func topoOrders(parts []part) [][]part {
	var out [][]part
	var walk func(order []part, left []part)
	walk = func(order []part, left []part) {
		if len(left) == 0 {
			out = append(out, slices.Clone(order))
			return
		}
		for i, p := range left {
			if !slices.ContainsFunc(p.needs, func(n string) bool {
				return slices.ContainsFunc(left, func(q part) bool { return q.name == n })
			}) {
				rest := slices.Concat(left[:i:i], left[i+1:])
				walk(append(order, p), rest)
			}
		}
	}
	walk(nil, parts)
	return out
}

// TestCoreInEveryOrder builds the core in every order the parts' needs
// allow and checks, each time, that membership flows from the replica set
// into the ingest: a registered replica's KV update lands in its model's
// index with its declared layout, a deregistration drops it, and the
// driver whose state was lost is asked (through the receiver) for a
// snapshot when the replica comes back. A part that read another it does
// not list would find it nil in some order and fail here.
func TestCoreInEveryOrder(t *testing.T) {
	parts := coreParts(config.Config{KVToken: "tok"}, hclog.NewNullLogger())
	orders := topoOrders(parts)
	if len(orders) < 2 {
		t.Fatalf("%d orders; the parts' needs allow more than one", len(orders))
	}
	for _, order := range orders {
		names := make([]string, len(order))
		for i, p := range order {
			names[i] = p.name
		}
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			c, err := buildCore(order)
			if err != nil {
				t.Fatal(err)
			}
			if err := exerciseCore(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCoreCheckCatchesAnUnlistedPart: a part that reads one it does not
// list finds it nil, and the check fails, whatever the order.
func TestCoreCheckCatchesAnUnlistedPart(t *testing.T) {
	parts := coreParts(config.Config{KVToken: "tok"}, hclog.NewNullLogger())
	for i := range parts {
		if parts[i].name == "set" {
			parts[i].needs = slices.DeleteFunc(slices.Clone(parts[i].needs), func(n string) bool { return n == "sink" })
		}
	}
	c, err := buildCore(parts)
	if err == nil {
		err = exerciseCore(c)
	}
	if err == nil {
		t.Fatal("the set built without the sink it reads, and the check passed")
	}
}

// exerciseCore registers a replica, sends its driver's snapshot through the
// receiver, and checks the index; then deregisters it and checks it is
// gone, and that its driver must resend a snapshot when it rejoins. A
// panic (a nil part) is returned as an error.
func exerciseCore(c core) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	rep := replicas.Replica{ID: "a/1", Model: "m", Address: "127.0.0.1:1", KVCacheGroups: "full,mamba"}
	c.set.Replace([]replicas.Replica{rep})
	if err := send(c, &kvwire.Update{Snapshot: true, Replicas: []kvwire.Replica{
		{ID: "a/1", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{1, 2, 3}}}},
	}}); err != nil {
		return err
	}
	if got := heldBlocks(c, "a/1"); got != 3 {
		return fmt.Errorf("the index holds %d blocks of a/1; want 3", got)
	}
	if c.set.Mode("a/1") != scheduler.ModeExact || !c.layouts.Of("a/1").Mamba() {
		return fmt.Errorf("a/1 mode %s, layout %v; want exact, the declared full,mamba", c.set.Mode("a/1"), c.layouts.Of("a/1"))
	}
	c.capacity.observe("a/1", 1000, 0)
	c.capacity.check()
	c.set.Replace(nil)
	if got := heldBlocks(c, "a/1"); got != 0 || c.sink.Synced("a/1") || c.layouts.Any() {
		return fmt.Errorf("after deregistration: %d blocks, synced %v, layouts %v; want none", got, c.sink.Synced("a/1"), c.layouts.Any())
	}
	// Its driver goes on with a delta the ingest cannot follow; when the
	// replica is back, the set has the receiver ask for a snapshot.
	delta := &kvwire.Update{Seq: 1, Replicas: []kvwire.Replica{{ID: "a/1", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{4}}}}}}
	if err := send(c, delta); err != nil {
		return err
	}
	c.set.Replace([]replicas.Replica{rep})
	delta.Seq = 2
	if err := send(c, delta); !errors.Is(err, kvwire.ErrSnapshotRequired) {
		return fmt.Errorf("delta after rejoining: %v; want %v", err, kvwire.ErrSnapshotRequired)
	}
	return nil
}

// send posts u from driver d1 to the core's receiver.
func send(c core, u *kvwire.Update) error {
	u.Version, u.Driver, u.Epoch = kvwire.Version, "d1", 1
	body, err := kvwire.Encode(u)
	if err != nil {
		return err
	}
	return c.receiver.Receive("Bearer tok", body)
}

// heldBlocks is how many of the keys 1, 2, 3 replica holds in model m's
// index.
func heldBlocks(c core, replica string) int {
	for _, m := range c.models.Lookup("m", []uint64{1, 2, 3}, nil) {
		if m.Replica == replica {
			return m.Blocks
		}
	}
	return 0
}
