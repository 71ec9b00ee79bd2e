// Command bench-scale runs the router's growth sweep (router/scalebench)
// and writes its results: CSV, JSON and PNG plots into -out, and the
// markdown section of -doc between the sweep's markers. `make
// bench-scale` runs it with the paths docs/BENCHMARKS.md expects;
// -only snapshots runs the snapshot-apply sweep alone and prints it.
package main

import (
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
	only := flag.String("only", "", `run one sweep and print its table, writing no file ("snapshots": snapshot apply against replicas)`)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	switch *only {
	case "":
	case "snapshots":
		cfg.Log = os.Stderr
		ps, err := scalebench.SnapshotSweep(cfg)
		if err != nil {
			return err
		}
		scalebench.WriteSnapshots(os.Stdout, ps)
		return nil
	default:
		return fmt.Errorf("-only %q: the sweeps that run alone are: snapshots", *only)
	}
	var res *scalebench.Results
	if *render != "" {
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
