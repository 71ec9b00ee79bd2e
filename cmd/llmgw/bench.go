package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
)

// runBench runs `llmgw bench`: it starts a fleet (Consul, routers, the
// driver with vllm-sim shards), compares the policies on one workload,
// prints the Markdown table and writes the files asked for. It returns the
// exit code: 0, 1 when the run fails, 2 for bad usage.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseBenchFlags(args, stdout, stderr)
	switch {
	case errors.Is(err, errHelpShown):
		return 0
	case errors.Is(err, errUsageShown):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "llmgw bench: %v\n%s\n", err, benchUsage)
		return 2
	}
	if c.sweep.render != "" {
		if err := renderSweep(c, stdout); err != nil {
			fmt.Fprintf(stderr, "llmgw bench: %v\n", err)
			return 1
		}
		return 0
	}
	w, setup, err := c.buildWorkload()
	if err != nil {
		fmt.Fprintf(stderr, "llmgw bench: %v\n", err)
		return 2
	}
	if c.binDir == "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "llmgw bench: %v\n", err)
			return 1
		}
		c.binDir = filepath.Dir(self)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	run := benchOnFleet
	switch {
	case c.fault.killAfter > 0:
		run = benchFault
	case c.sweep.rates != nil:
		run = sweepOnFleet
	}
	if err := run(ctx, c, args, w, setup, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "llmgw bench: %v\n", err)
		return 1
	}
	return 0
}

func benchOnFleet(ctx context.Context, c benchConfig, args []string, w workload.Workload, setup string, stdout, stderr io.Writer) error {
	f, err := startBenchFleet(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer f.Close()
	o := c.options(args, w, setup)
	o.OnStart = func(p bench.Policy) { fmt.Fprintf(stderr, "policy %s\n", p.Name) }
	reqs, finish, err := createRequestLog(c.requestsOut, w)
	if err != nil {
		return err
	}
	defer finish()
	if reqs != nil {
		o.OnResult = reqs.record
	}
	if c.progress {
		o.ShowProgress(stderr)
	}
	rep, err := bench.Run(ctx, f, o)
	if err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	return writeReport(rep, c, stdout)
}

// startBenchFleet starts the fleet c describes.
func startBenchFleet(ctx context.Context, c benchConfig, stderr io.Writer) (*fleet.Fleet, error) {
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Warn, Output: stderr})
	fmt.Fprintf(stderr, "starting Consul, the driver with %s and %d routers\n", c.shardNote(), c.routers)
	f, err := fleet.Start(ctx, fleet.Options{BinDir: c.binDir, Shards: c.shards, Routers: c.routers,
		SimArgs: strings.Fields(c.simArgs), MaxModelLen: c.maxModelLen, Log: log, DataParallelSize: c.dataParallel})
	if err != nil {
		return nil, fmt.Errorf("start fleet: %w", err)
	}
	return f, nil
}

// options are the bench options for workload w (described by setup).
func (c *benchConfig) options(args []string, w workload.Workload, setup string) bench.Options {
	return bench.Options{Workload: w, Policies: c.policies, Model: "sim-model", BlockSize: shardBlockSize, SLO: c.slo, Rate: c.rate,
		Command: strings.Join(append([]string{"llmgw", "bench"}, args...), " "),
		Setup: fmt.Sprintf("%s; %s (%s, max_model_len %d), %d routers",
			setup, c.shardNote(), simNote(c.simArgs), c.maxModelLen, c.routers)}
}

// shardNote counts the shards for the setup line, with their
// data-parallel ranks when they have more than one.
func (c *benchConfig) shardNote() string {
	if c.dataParallel > 1 {
		return fmt.Sprintf("%d vllm-sim shards of %d data-parallel ranks", c.shards, c.dataParallel)
	}
	return fmt.Sprintf("%d vllm-sim shards", c.shards)
}

// simNote describes the simulator in the setup line: its latency model
// (the default unless a latency flag is among args) and any extra flags.
func simNote(args string) string {
	model := "default latency model"
	for _, f := range []string{"--sim-latency", "--no-sim-latency", "--sim-overhead", "--sim-prefill-per-token", "--sim-inter-token-latency", "--sim-load-factor"} {
		if strings.Contains(args, f) {
			model = "latency model set by its flags"
		}
	}
	if args == "" {
		return model
	}
	return model + ", with " + args
}

// writeReport prints the Markdown and writes the files asked for: in
// -out, the plots, report.json and report.md (linking the plots beside
// it); in -doc, the same section linking the plots relative to the doc.
func writeReport(rep *report.Report, c benchConfig, stdout io.Writer) error {
	if c.outDir == "" {
		fmt.Fprint(stdout, rep.Markdown(nil))
		return nil
	}
	if err := os.MkdirAll(c.outDir, 0o755); err != nil {
		return err
	}
	plots, err := rep.Plots(c.outDir)
	if err != nil {
		return err
	}
	js, err := rep.JSON()
	if err != nil {
		return err
	}
	return writeOutputs(c, stdout, "report", js, plots, rep.Markdown)
}

// writeOutputs is what every report writer does once its plots are in
// -out: print the Markdown linking them, write NAME.json and NAME.md in
// -out, and splice the section into -doc with the plots linked relative
// to the doc.
func writeOutputs(c benchConfig, stdout io.Writer, name string, js []byte, plots []string, markdown func(plots []string) string) error {
	return writeOutputsDoc(c, stdout, name, js, plots, markdown, markdown)
}

// writeOutputsDoc is writeOutputs with docMarkdown rendering the -doc
// section (a sweep's is shorter than its sweep.md).
func writeOutputsDoc(c benchConfig, stdout io.Writer, name string, js []byte, plots []string, markdown, docMarkdown func(plots []string) string) error {
	md := markdown(plots)
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(filepath.Join(c.outDir, name+".json"), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.outDir, name+".md"), []byte(md), 0o644); err != nil {
		return err
	}
	if c.doc == "" {
		return nil
	}
	rel, err := filepath.Rel(filepath.Dir(c.doc), c.outDir)
	if err != nil {
		return err
	}
	linked := make([]string, len(plots))
	for i, p := range plots {
		linked[i] = filepath.ToSlash(filepath.Join(rel, p))
	}
	return spliceDoc(c.doc, c.section, docMarkdown(linked))
}

// spliceDoc rewrites section of the Markdown file doc (between its
// marker comments) to md: what every bench mode does with -doc.
func spliceDoc(doc, section, md string) error {
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := report.Splice(string(old), section, md)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return os.WriteFile(doc, []byte(out), 0o644)
}
