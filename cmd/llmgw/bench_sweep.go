package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// quickRequests caps each run of a -quick sweep.
const quickRequests = 48

// maxRuns bounds -runs: a sweep is minutes a run.
const maxRuns = 20

// maxSizedRequests bounds what -duration may ask of one rate, so a typo
// cannot build a workload that fills the memory.
const maxSizedRequests = 100000

// sweepFlags turn `llmgw bench` into a rate sweep: every policy at every
// rate, on one fleet.
type sweepFlags struct {
	list  string
	quick bool
	noise float64
	// duration, when set, sizes each rate's workload to about that long
	// a schedule (sized), rather than the same requests at every rate.
	duration time.Duration
	rates    []float64 // parsed from list; nil: no sweep
	// runs is how many times the sweep runs, run r on seed -seed + r.
	runs int
	// render is a sweep.json to render again instead of running.
	render string
}

func (s *sweepFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.list, "rates", "", "sweep: comma list of rising arrival rates (as -rate); every policy runs at each on one fleet, and the report adds the knee, goodput and oracle-share plots")
	fs.BoolVar(&s.quick, "quick", false, "sweep: a CI check in a few minutes: only the lowest and highest rate, and at most 48 requests per run")
	fs.DurationVar(&s.duration, "duration", 0, "sweep: size each rate's workload to about this long a schedule (rate x duration requests: -requests, -bursts, -max-requests, -agent-sessions, or -sessions/-users x -rounds, -groups x -per-group, -b2b-groups x 5, -prompts); 0 keeps the workload's flags at every rate")
	fs.StringVar(&s.render, "render", "", "sweep: render this sweep.json again (its tables, plot and -doc section, with the current report format and -noise) instead of running; a comma list adds the others' runs as repeats of the first (the report gives the medians and ranges, as -runs does)")
	fs.IntVar(&s.runs, "runs", 1, "sweep: run the whole sweep this many times, on seeds -seed, -seed+1, ...; the report gives the medians over the runs and their ranges, and counts a comparison whose range of ratios holds 1 as a tie; when a run fails, the completed ones are kept in -out/"+partialSweep)
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
	if s.runs < 1 || s.runs > maxRuns {
		return fmt.Errorf("-runs must be in [1, %d], got %d", maxRuns, s.runs)
	}
	if s.duration < 0 {
		return fmt.Errorf("-duration must be >= 0, got %s", s.duration)
	}
	if n := rates[len(rates)-1] * s.duration.Seconds(); n > maxSizedRequests {
		return fmt.Errorf("-duration %s at %g req/s asks for %.0f requests; at most %d", s.duration, rates[len(rates)-1], n, maxSizedRequests)
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
	if c.sweep.duration > 0 {
		// The flags' sizes are replaced at every rate: describe the
		// lowest rate's.
		at := c
		at.rate = c.sweep.rates[0]
		at.sized(at.rate * c.sweep.duration.Seconds())
		_, lowest, err := at.buildWorkload()
		if err != nil {
			return err
		}
		setup = fmt.Sprintf("sized to %s of arrivals at each rate, at %g req/s: %s", c.sweep.duration, at.rate, lowest)
	}
	if c.sweep.quick {
		setup += fmt.Sprintf(" (-quick: the first %d requests)", quickRequests)
	}
	reqs, finish, err := createRequestLog(c.requestsOut, workload.Workload{})
	if err != nil {
		return err
	}
	defer finish()
	run := 0 // the run under way; its seed is c.seed + run
	o := bench.SweepOptions{Options: c.options(args, workload.Workload{}, setup), Rates: c.sweep.rates, Noise: c.sweep.noise,
		Build: func(rate float64) (workload.Workload, error) {
			at := c
			at.rate, at.seed = rate, c.seed+uint64(run)
			if c.sweep.duration > 0 {
				at.sized(rate * c.sweep.duration.Seconds())
			}
			w, _, err := at.buildWorkload()
			if c.sweep.quick && len(w.Requests) > quickRequests {
				w.Requests = w.Requests[:quickRequests]
			}
			if reqs != nil {
				reqs.at(rate, w)
			}
			return w, err
		},
		OnRate: func(rate float64) {
			if c.sweep.runs > 1 {
				fmt.Fprintf(stderr, "run %d of %d (seed %d): ", run+1, c.sweep.runs, c.seed+uint64(run))
			}
			fmt.Fprintf(stderr, "rate %g req/s\n", rate)
		},
	}
	o.OnStart = func(p bench.Policy) { fmt.Fprintf(stderr, "  policy %s\n", p.Name) }
	if reqs != nil {
		o.OnResult = reqs.record
	}
	if c.progress {
		o.ShowProgress(stderr)
	}
	s, err := c.runSweeps(func(r int) (*report.Sweep, error) {
		run = r
		return bench.Sweep(ctx, f, o)
	})
	if err != nil {
		return err
	}
	if err := finish(); err != nil {
		return err
	}
	if err := c.dropPartial(); err != nil {
		return err
	}
	return writeSweep(s, c, stdout)
}

// dropPartial removes a partialSweep an earlier, failed sweep left in
// -out: the complete sweep written beside it supersedes it, and a stale
// one would be read (or committed) as this sweep's.
func (c *benchConfig) dropPartial() error {
	if c.outDir == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(c.outDir, partialSweep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the earlier sweep's partial runs: %w", err)
	}
	return nil
}

// partialSweep is the file in -out that keeps a sweep's completed runs
// when a later run fails or is cut short.
const partialSweep = "sweep-partial.json"

// runSweeps runs the sweep -runs times (run r on seed -seed + r) and
// gathers the runs, the first with the others as its repeats. A run of a
// sweep takes minutes to an hour, so when one fails (a -timeout reached,
// a signal) after others completed, the completed runs are written to
// partialSweep in -out, where -render reads them, rather than lost.
func (c *benchConfig) runSweeps(sweep func(run int) (*report.Sweep, error)) (*report.Sweep, error) {
	var s *report.Sweep
	for run := range c.sweep.runs {
		r, err := sweep(run)
		if err != nil {
			err = fmt.Errorf("run %d of %d (seed %d): %w", run+1, c.sweep.runs, c.seed+uint64(run), err)
			if s != nil {
				err = c.savePartial(s, run, err)
			}
			return nil, err
		}
		r.Seed = c.seed + uint64(run)
		if s == nil {
			s = r
		} else {
			s.Repeats = append(s.Repeats, r)
		}
	}
	return s, nil
}

// savePartial writes the completed runs of s (done of them) to
// partialSweep in -out and adds where they are to err.
func (c *benchConfig) savePartial(s *report.Sweep, done int, err error) error {
	if c.outDir == "" {
		return fmt.Errorf("%w; %s not kept (no -out)", err, completedRuns(done))
	}
	path := filepath.Join(c.outDir, partialSweep)
	js, jerr := s.JSON()
	if jerr == nil {
		jerr = os.MkdirAll(c.outDir, 0o755)
	}
	if jerr == nil {
		jerr = os.WriteFile(path, js, 0o644)
	}
	if jerr != nil {
		return fmt.Errorf("%w; keeping %s failed: %v", err, completedRuns(done), jerr)
	}
	return fmt.Errorf("%w; %s kept in %s (llmgw bench -render %s reads it)", err, completedRuns(done), path, path)
}

// completedRuns is "1 completed run" or "n completed runs".
func completedRuns(n int) string {
	if n == 1 {
		return "1 completed run"
	}
	return fmt.Sprintf("%d completed runs", n)
}

// sized sets the workload's size flags so that it sends about n
// requests (at least one of each unit: a burst, a session, a group).
func (c *benchConfig) sized(n float64) {
	units := func(per int) int { return max(1, int(math.Ceil(n/float64(max(per, 1))))) }
	switch c.workload {
	case "chat":
		c.users = units(c.rounds)
	case "many-session":
		c.stress.sessions = units(c.rounds)
	case "prefix":
		c.groups = units(c.perGroup)
	case "siblings":
		c.prompts = units(1) // -rate counts bursts of -samples
	case "trace":
		c.maxRequests = units(1)
	case "fan-out":
		c.stress.bursts = units(1) // -rate counts bursts
	case "mixed-tenants":
		c.stress.requests = units(1)
	case "b2b-saas":
		c.stress.b2bGroups = units(5)
	case "coding-agent":
		c.stress.agentSessions = units(1) // -rate counts sessions
	}
}

// renderSweep writes the report of a sweep run before, from its JSON; a
// comma list renders the first with the others as its repeats (their
// capacities spread in its capacity table).
func renderSweep(c benchConfig, stdout io.Writer) error {
	var sweeps []*report.Sweep
	for _, path := range strings.Split(c.sweep.render, ",") {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s report.Sweep
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(s.Rates) == 0 {
			return fmt.Errorf("%s: no rates", path)
		}
		if len(s.Peers) == 0 {
			s.Peers = bench.PeerNames() // written before sweeps listed them
		}
		sweeps = append(sweeps, &s)
	}
	s := sweeps[0]
	for _, other := range sweeps[1:] {
		s.Repeats = append(s.Repeats, other.Runs()...)
	}
	s.Noise = c.sweep.noise
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
	return writeOutputsDoc(c, stdout, "sweep", js, []string{report.SweepPlot}, s.Markdown, s.DocMarkdown)
}
