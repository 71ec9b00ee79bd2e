package server

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// core is the router's shared state, which every listener reads: the
// block index, the KV ingest into it, the replica set and what watches
// them. Its parts depend on each other one way: membership flows from the
// replica set into the ingest (replicas.KVState), which the KV receiver
// feeds, and the set asks the receiver for the snapshots the ingest could
// not keep (replicas.Drivers). No part reads another that is built after
// it.
type core struct {
	models   *index.Models
	layouts  *kvgroups.Registry // KV-cache group layouts of hybrid replicas
	sink     *ingest.Sink
	receiver *kvwire.Receiver // nil without a kv_token: KV ingest is off
	tracker  *load.Tracker
	set      *replicas.Set
	capacity *capacity
}

// part is one step of building the core: build makes the part named name
// from the parts in needs, which are built before it.
type part struct {
	name  string
	needs []string
	build func(in *core) error
}

// coreParts lists the core's parts, in an order their needs allow.
func coreParts(cfg config.Config, log hclog.Logger) []part {
	return []part{
		{"models", nil, func(in *core) error {
			in.models = index.NewModels(index.Options{OnOverflow: func(keys, max int) {
				log.Error("block index over the fleet's advertised KV capacity; new blocks are dropped", "keys", keys, "max", max)
			}})
			return nil
		}},
		{"layouts", nil, func(in *core) error { in.layouts = kvgroups.NewRegistry(); return nil }},
		{"tracker", nil, func(in *core) error { in.tracker = load.NewTracker(); return nil }},
		{"sink", []string{"models", "layouts"}, func(in *core) error {
			in.sink = ingest.New(in.models, ingest.Options{Logger: log.Named("ingest"), Layouts: in.layouts})
			return nil
		}},
		{"receiver", []string{"sink"}, func(in *core) (err error) {
			if cfg.KVToken == "" {
				log.Warn("no kv_token configured: KV ingest is off and every replica routes in approx mode")
				return nil
			}
			in.receiver, err = kvwire.NewReceiver(cfg.KVToken, in.sink)
			return err
		}},
		{"set", []string{"models", "sink", "receiver", "tracker"}, func(in *core) error {
			opts := replicas.Options{Logger: log.Named("replicas"), Holders: in.models}
			if in.receiver != nil {
				opts.Drivers = in.receiver
			}
			in.set = replicas.New(in.sink, in.tracker, opts)
			return nil
		}},
		{"capacity", []string{"models", "set", "sink", "receiver"}, func(in *core) error {
			var sessions driverSessions
			if in.receiver != nil {
				sessions = ingestSessions{sink: in.sink, receiver: in.receiver}
			}
			in.capacity = newCapacity(in.models, in.set, sessions, cfg.Index.CPURatio, log.Named("capacity"))
			return nil
		}},
	}
}

// buildCore builds parts in the order given. Each build sees only the
// parts it needs, the others nil, so a part that reads one it does not
// list fails at once rather than in whichever order happens to build that
// one later (core_test.go builds them in every order the needs allow).
func buildCore(parts []part) (core, error) {
	var c core
	built := map[string]bool{}
	for _, p := range parts {
		var in core
		for _, n := range p.needs {
			if !built[n] {
				return core{}, fmt.Errorf("router part %s needs %s, not built yet", p.name, n)
			}
			in.take(n, &c)
		}
		if err := p.build(&in); err != nil {
			return core{}, fmt.Errorf("router part %s: %w", p.name, err)
		}
		c.take(p.name, &in)
		built[p.name] = true
	}
	return c, nil
}

// take copies the part named name from src.
func (c *core) take(name string, src *core) {
	switch name {
	case "models":
		c.models = src.models
	case "layouts":
		c.layouts = src.layouts
	case "sink":
		c.sink = src.sink
	case "receiver":
		c.receiver = src.receiver
	case "tracker":
		c.tracker = src.tracker
	case "set":
		c.set = src.set
	case "capacity":
		c.capacity = src.capacity
	default:
		panic("router part " + name + " is not in the core")
	}
}
