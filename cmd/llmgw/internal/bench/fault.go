package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
)

// FaultFleet is a Fleet whose engines a fault run can kill
// (cmd/llmgw/internal/fleet's Fleet provides it).
type FaultFleet interface {
	Fleet
	// KillEngine sends SIGKILL to shard i's engine and returns its
	// replica id.
	KillEngine(i int) (string, error)
}

// Survival is what one fault run measured: how many streams the killed
// replica was serving when it died, and how many of those still reached
// the client whole.
type Survival struct {
	Variant string
	// KilledAt is when the engine died, from the start of the run;
	// Replica which one.
	KilledAt time.Duration
	Replica  string
	// Requests were sent; OK completed.
	Requests, OK int
	// Hit are the streams that had started on Replica before it died and
	// had not ended; Survived those of them that completed.
	Hit, Survived int
}

// RunFault replays o's workload once with o.Policies[0], killing shard's
// engine killAfter into the run, and measures the streams that survive.
// variant names the run in the table (e.g. "migration on").
func RunFault(ctx context.Context, f FaultFleet, o Options, variant string, shard int, killAfter time.Duration) (Survival, error) {
	if len(o.Policies) == 0 {
		return Survival{}, errors.New("bench: a fault run needs a policy")
	}
	o.Policies = o.Policies[:1]
	var (
		mu      sync.Mutex
		results []client.Result
		killed  string
		killAt  time.Duration
		killErr error
	)
	onResult := o.OnResult
	o.OnResult = func(p Policy, r client.Result) {
		mu.Lock()
		results = append(results, r)
		mu.Unlock()
		if onResult != nil {
			onResult(p, r)
		}
	}
	o.During = func(ctx context.Context, _ Policy) {
		start := time.Now()
		t := time.NewTimer(killAfter)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id, err := f.KillEngine(shard)
		mu.Lock()
		killed, killAt, killErr = id, time.Since(start), err
		mu.Unlock()
	}
	if _, err := Run(ctx, f, o); err != nil {
		return Survival{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if killErr != nil {
		return Survival{}, fmt.Errorf("bench: %w", killErr)
	}
	if killed == "" {
		return Survival{}, fmt.Errorf("bench: the run ended before the kill at %s; send more requests or kill sooner", killAfter)
	}
	return survival(variant, killed, killAt, results), nil
}

// survival counts the results of a run whose replica died at killAt.
func survival(variant, replica string, killAt time.Duration, results []client.Result) Survival {
	s := Survival{Variant: variant, KilledAt: killAt, Replica: replica, Requests: len(results)}
	for _, r := range results {
		if r.OK() {
			s.OK++
		}
		// In flight on the replica when it died: started before, and
		// still running then (it failed, or it ended after).
		if r.Replica == replica && r.Started && r.Sent < killAt && (!r.OK() || r.Sent+r.E2E > killAt) {
			s.Hit++
			if r.OK() {
				s.Survived++
			}
		}
	}
	return s
}

// SurvivalMarkdown renders fault runs as a Markdown table.
func SurvivalMarkdown(runs []Survival) string {
	var b strings.Builder
	b.WriteString("| variant | requests | completed | streams on the killed replica | survived | killed at |\n|---|---:|---:|---:|---:|---:|\n")
	for _, s := range runs {
		pct := "-"
		if s.Hit > 0 {
			pct = fmt.Sprintf("%d (%.0f %%)", s.Survived, 100*float64(s.Survived)/float64(s.Hit))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s | %.1f s |\n", s.Variant, s.Requests, s.OK, s.Hit, pct, s.KilledAt.Seconds())
	}
	return b.String()
}
