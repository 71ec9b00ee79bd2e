package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// quickRequests caps each run of a -quick sweep.
const quickRequests = 48

// sweepFlags turn `llmgw bench` into a rate sweep: every policy at every
// rate, on one fleet.
type sweepFlags struct {
	list  string
	quick bool
	noise float64
	rates []float64 // parsed from list; nil: no sweep
}

func (s *sweepFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.list, "rates", "", "sweep: comma list of rising arrival rates (as -rate); every policy runs at each on one fleet, and the report adds the knee, goodput and oracle-share plots")
	fs.BoolVar(&s.quick, "quick", false, "sweep: a CI check in a few minutes: only the lowest and highest rate, and at most 48 requests per run")
	fs.Float64Var(&s.noise, "noise", 0.1, "sweep: relative goodput difference within the run's noise; a peer counts as ahead of the default only beyond it")
}

// parse checks the sweep flags against the rest of c.
func (s *sweepFlags) parse(c *benchConfig) error {
	if s.list == "" {
		if s.quick {
			return fmt.Errorf("-quick needs -rates")
		}
		return nil
	}
	rates, err := bench.ParseRates(s.list)
	if err != nil {
		return fmt.Errorf("-rates: %w", err)
	}
	if s.quick && len(rates) > 2 {
		rates = []float64{rates[0], rates[len(rates)-1]}
	}
	if !(s.noise >= 0 && s.noise < 1) {
		return fmt.Errorf("-noise must be in [0, 1), got %g", s.noise)
	}
	if c.workload == "trace" && c.rate == 0 {
		return fmt.Errorf("-rates replaces -rate; a trace's own timestamps (-rate 0) cannot be swept")
	}
	s.rates = rates
	return nil
}

// sweepOnFleet runs the sweep c asks for on one fleet and writes its
// report; w (built at -rate) only checked the flags.
func sweepOnFleet(ctx context.Context, c benchConfig, args []string, _ workload.Workload, setup string, stdout, stderr io.Writer) error {
	f, err := startBenchFleet(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer f.Close()
	if c.sweep.quick {
		setup += fmt.Sprintf(" (-quick: the first %d requests)", quickRequests)
	}
	o := bench.SweepOptions{Options: c.options(args, workload.Workload{}, setup), Rates: c.sweep.rates, Noise: c.sweep.noise,
		Build: func(rate float64) (workload.Workload, error) {
			at := c
			at.rate = rate
			w, _, err := at.buildWorkload()
			if c.sweep.quick && len(w.Requests) > quickRequests {
				w.Requests = w.Requests[:quickRequests]
			}
			return w, err
		},
		OnRate: func(rate float64) { fmt.Fprintf(stderr, "rate %g req/s\n", rate) },
	}
	o.OnStart = func(p bench.Policy) { fmt.Fprintf(stderr, "  policy %s\n", p.Name) }
	if c.progress {
		o.ShowProgress(stderr)
	}
	s, err := bench.Sweep(ctx, f, o)
	if err != nil {
		return err
	}
	return writeSweep(s, c, stdout)
}

// writeSweep prints the sweep's Markdown and writes the files asked for,
// as writeReport does for one rate: in -out, sweep.png, sweep.json and
// sweep.md; in -doc, the section linking the plot relative to the doc.
func writeSweep(s *report.Sweep, c benchConfig, stdout io.Writer) error {
	if c.outDir == "" {
		fmt.Fprint(stdout, s.Markdown(nil))
		return nil
	}
	if err := os.MkdirAll(c.outDir, 0o755); err != nil {
		return err
	}
	if err := s.Plot(filepath.Join(c.outDir, report.SweepPlot)); err != nil {
		return err
	}
	js, err := s.JSON()
	if err != nil {
		return err
	}
	md := s.Markdown([]string{report.SweepPlot})
	fmt.Fprint(stdout, md)
	if err := os.WriteFile(filepath.Join(c.outDir, "sweep.json"), js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.outDir, "sweep.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if c.doc == "" {
		return nil
	}
	rel, err := filepath.Rel(filepath.Dir(c.doc), c.outDir)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(c.doc)
	if err != nil {
		return err
	}
	doc, err := report.Splice(string(old), c.section, s.Markdown([]string{filepath.ToSlash(filepath.Join(rel, report.SweepPlot))}))
	if err != nil {
		return fmt.Errorf("%s: %w", c.doc, err)
	}
	return os.WriteFile(c.doc, []byte(doc), 0o644)
}
