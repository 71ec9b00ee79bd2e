// Command bench-scale runs the router's growth sweep (router/scalebench)
// and writes its results: CSV, JSON and PNG plots into -out, and the
// markdown section of -doc between the sweep's markers. `make
// bench-scale` runs it with the paths docs/BENCHMARKS.md expects.
//
// -only runs some parts alone (peers, snapshots, discovery; a comma
// list) and prints their tables, writing no file; with -merge it puts
// them into -out's results.json in place of that run's, and writes the
// files and the section from the whole, so a part can be measured again
// without the decision's sweep.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/llmgw/llmgw/router/scalebench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := scalebench.DefaultConfig()
	out := flag.String("out", "docs/bench-scale", "directory for the CSV, JSON and PNG files")
	doc := flag.String("doc", "docs/BENCHMARKS.md", "markdown file whose bench-scale section is rewritten (empty: none)")
	plotDir := flag.String("plot-dir", "bench-scale", "the plots' directory as the document links it")
	label := flag.String("label", "an unnamed machine", "where the sweep ran, for the report (branch, machine)")
	command := flag.String("command", "make bench-scale", "the command the report names")
	flag.IntVar(&cfg.Runs, "runs", cfg.Runs, "runs per figure (the figure is their median)")
	flag.DurationVar(&cfg.RunTime, "run-time", cfg.RunTime, "how long each run samples the decision")
	render := flag.String("render", "", "write the plots and the section from this results.json instead of sweeping")
	only := flag.String("only", "", "run these parts alone (a comma list of: peers, snapshots, discovery) and print their tables")
	merge := flag.Bool("merge", false, "with -only: put the parts into -out's results.json and write the files and the section")
	baseLabel := flag.String("base-label", "", "with -merge: the -label of the saved run, where its results.json has none")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var res *scalebench.Results
	if *only != "" {
		var err error
		if res, err = runParts(cfg, *only, *merge, *out, *label); err != nil || !*merge {
			return err
		}
		res.Label = cmp.Or(res.Label, *baseLabel)
	} else if *render != "" {
		b, err := os.ReadFile(*render)
		if err != nil {
			return err
		}
		res = &scalebench.Results{}
		if err := json.Unmarshal(b, res); err != nil {
			return fmt.Errorf("%s: %w", *render, err)
		}
	} else {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		cfg.Log = os.Stderr
		var err error
		if res, err = scalebench.Run(ctx, cfg); err != nil {
			return err
		}
		res.Label = *label
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	plots, err := res.Plots(*out)
	if err != nil {
		return err
	}
	if err := writeFiles(res, *out); err != nil {
		return err
	}
	if *doc == "" {
		return nil
	}
	text, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	md := res.Markdown(scalebench.Meta{Command: *command, Label: *label, PlotDir: *plotDir}, plots)
	spliced, err := scalebench.Splice(string(text), md)
	if err != nil {
		return fmt.Errorf("%s: %w", *doc, err)
	}
	return os.WriteFile(*doc, []byte(spliced), 0o644)
}

// runParts runs the parts listed in only, into -out's saved results
// when merge, and prints their tables.
func runParts(cfg scalebench.Config, only string, merge bool, out, label string) (*scalebench.Results, error) {
	parts, err := scalebench.ParseParts(only)
	if err != nil {
		return nil, fmt.Errorf("-only: %w", err)
	}
	// A fresh Results: decoding into one holding cfg would write the
	// saved axes into cfg's slices.
	res := &scalebench.Results{}
	if !merge {
		res.Config = cfg
	} else {
		saved := filepath.Join(out, "results.json")
		b, err := os.ReadFile(saved)
		if err != nil {
			return nil, fmt.Errorf("-merge: %w", err)
		}
		if err := json.Unmarshal(b, res); err != nil {
			return nil, fmt.Errorf("%s: %w", saved, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Log = os.Stderr
	if err := res.RunParts(ctx, cfg, parts, label); err != nil {
		return nil, err
	}
	res.WriteParts(os.Stdout, parts)
	return res, nil
}

// writeFiles writes points.csv, peers.csv and results.json into dir.
func writeFiles(res *scalebench.Results, dir string) (err error) {
	points, err := os.Create(filepath.Join(dir, "points.csv"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, points.Close()) }()
	peers, err := os.Create(filepath.Join(dir, "peers.csv"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, peers.Close()) }()
	if err := res.WriteCSV(points, peers); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644)
}
