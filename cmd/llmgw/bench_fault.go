package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
)

// faultFlags select the fault run: a replica's engine killed mid-run,
// once with mid-stream migration and once without, each on a fresh fleet.
type faultFlags struct {
	killAfter time.Duration
	shard     int
}

func (f *faultFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.killAfter, "fault-kill-after", 0, "fault run: SIGKILL one shard's engine this long into the run, with mid-stream migration on and then off (a fresh fleet each), and report how many of its streams survive (0: no fault run)")
	fs.IntVar(&f.shard, "fault-shard", 0, "fault run: the shard whose engine is killed")
}

// check refuses fault settings the run would find wrong only after a
// whole fleet's run, or would ignore.
func (f *faultFlags) check(c *benchConfig) error {
	switch {
	case f.killAfter < 0:
		return fmt.Errorf("-fault-kill-after %s: must not be negative (0: no fault run)", f.killAfter)
	case f.killAfter == 0:
		return nil
	case f.shard < 0 || f.shard >= c.shards:
		return fmt.Errorf("-fault-shard %d: the fleet has shards 0..%d", f.shard, c.shards-1)
	case c.requestsOut != "":
		return errors.New("-requests-out is not written by a fault run; run it without -fault-kill-after")
	}
	return nil
}

// faultVariants are the router settings a fault run compares.
var faultVariants = []struct{ name, hcl string }{
	{"migration on", "migration {\n  enabled = true\n}"},
	{"migration off", "migration {\n  enabled = false\n}"},
}

// benchFault runs the fault comparison with the first policy, prints its
// table and, with -doc, splices it into the document's section.
func benchFault(ctx context.Context, c benchConfig, args []string, w workload.Workload, setup string, stdout, stderr io.Writer) error {
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Error, Output: stderr})
	var runs []bench.Survival
	for _, v := range faultVariants {
		fmt.Fprintf(stderr, "fault run, %s: starting Consul, the driver with %s and %d routers\n", v.name, c.shardNote(), c.routers)
		f, err := fleet.Start(ctx, fleet.Options{BinDir: c.binDir, Shards: c.shards, Routers: c.routers,
			SimArgs: strings.Fields(c.simArgs), MaxModelLen: c.maxModelLen, Log: log, RouterHCL: v.hcl, DataParallelSize: c.dataParallel})
		if err != nil {
			return fmt.Errorf("start fleet: %w", err)
		}
		o := bench.Options{Workload: w, Policies: c.policies, Model: "sim-model", BlockSize: shardBlockSize, SLO: c.slo, Rate: c.rate}
		s, err := bench.RunFault(ctx, f, o, v.name, c.fault.shard, c.fault.killAfter)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		runs = append(runs, s)
	}
	md := fmt.Sprintf("Command: `%s`\n\nSetup: %s; %s (%s, max_model_len %d), %d routers, policy %s; shard %d's engine killed with SIGKILL %s into the run.\n\n%s",
		strings.Join(append([]string{"llmgw", "bench"}, args...), " "), setup, c.shardNote(), simNote(c.simArgs), c.maxModelLen, c.routers,
		c.policies[0].Name, c.fault.shard, c.fault.killAfter, bench.SurvivalMarkdown(runs))
	fmt.Fprint(stdout, md)
	if c.doc == "" {
		return nil
	}
	return spliceDoc(c.doc, c.section, md)
}
