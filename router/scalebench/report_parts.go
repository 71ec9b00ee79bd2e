package scalebench

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// peerTargets are the fleet-scale targets for one router's peer sharing
// at the sweep's most routers: % of a core, by replicas per message.
var peerTargets = map[int]float64{1024: 2, 4096: 5}

// peerSection writes the routers axis: one row per routers count, a
// column pair per replicas count.
func (r *Results) peerSection(w io.Writer) {
	fmt.Fprintf(w, "#### Routers (peer load sharing)\n\n")
	fmt.Fprintf(w, "One router's side of the fleet runs in the process (`router/scalebench/peersim.go`): its `router/peers` publisher, default pacing, sends its load, which changes on every replica at every read, to the other routers' tables, each behind a real HTTP server on loopback. "+
		"Every router sends as many messages as it receives, so the process's CPU per message is one router's per message sent and received, HTTP included. "+
		"A router sends each peer a message every `peers.PublisherOptions.Period` (50 ms up to 5 peers, then the 100 messages/s budget's gap rounded up to whole 50 ms ticks: 350 ms at 31 peers). "+
		"**%% core** prices that rate at the measured CPU per message, plus a sum handed to the load tracker at most every 50 ms (measured apart): one router's share of a core, median of %d runs of about %v (whole periods) [range]. "+
		"**B/s** is what one router sends (and receives), the HTTP requests as read off the connection.\n\n", r.peerRuns(), r.Config.PeerWindow)
	reps := r.Config.PeerReplicas
	fmt.Fprintf(w, "| routers | messages/s per router, nominal (sent) |")
	for _, n := range reps {
		fmt.Fprintf(w, " %s: %% core | %s: B/s |", thousands(n), thousands(n))
	}
	fmt.Fprintf(w, "\n|---|---|%s\n", strings.Repeat("---|", 2*len(reps)))
	for _, n := range r.Config.Routers {
		if n < 2 {
			continue // one router shares nothing
		}
		row := fmt.Sprintf("| %d |", n)
		for i, rep := range reps {
			p, ok := r.peer(n, rep)
			if !ok {
				row += " | |"
				continue
			}
			if i == 0 {
				row += fmt.Sprintf(" %.1f (%.1f) |", p.NominalPerSec, p.MsgsPerSec)
			}
			row += fmt.Sprintf(" %.2f [%.2f-%.2f] | %s |", p.CorePct, p.CoreMinPct, p.CoreMaxPct, si(p.SentPerRouter))
		}
		fmt.Fprintln(w, row)
	}
	fmt.Fprintf(w, "\nOne router's %% of a core against routers:")
	for i, rep := range reps {
		var x, y []float64
		for _, p := range r.Peers {
			if p.Replicas == rep {
				x, y = append(x, float64(p.Routers)), append(y, p.CorePct)
			}
		}
		sep := ";"
		if i == len(reps)-1 {
			sep = "."
		}
		fmt.Fprintf(w, " %s replicas %s%s", thousands(rep), growthOf(x, y), sep)
	}
	fmt.Fprintln(w)
}

// peerRuns is how many runs the peer figures are medians of.
func (r *Results) peerRuns() int {
	if r.Rerun != nil && slices.Contains(r.Rerun.Parts, "peers") {
		return r.Rerun.Runs
	}
	return r.Config.Runs
}

func (r *Results) peer(routers, replicas int) (PeerPoint, bool) {
	for _, p := range r.Peers {
		if p.Routers == routers && p.Replicas == replicas {
			return p, true
		}
	}
	return PeerPoint{}, false
}

// checkPeerTargets checks peer sharing at the most routers against
// peerTargets.
func (r *Results) checkPeerTargets(w io.Writer) {
	if len(r.Config.Routers) == 0 {
		return
	}
	most := slices.Max(r.Config.Routers)
	for _, rep := range r.Config.PeerReplicas {
		target, ok := peerTargets[rep]
		p, measured := r.peer(most, rep)
		if !ok || !measured {
			continue
		}
		verdict := "under"
		if p.CoreMaxPct >= target {
			verdict = "**not** under"
		}
		fmt.Fprintf(w, "- Peer sharing at %d routers × %s replicas: %.2f%% of a core per router [%.2f-%.2f], HTTP included, %s the %.0f%% target; %s/s sent per router.\n",
			most, thousands(rep), p.CorePct, p.CoreMinPct, p.CoreMaxPct, verdict, target, si(p.SentPerRouter))
	}
}

// discoverySection writes Nomad discovery's calls against replicas.
func (r *Results) discoverySection(w io.Writer) {
	if len(r.Discovery) == 0 {
		return
	}
	runs := r.Config.Runs
	if r.Rerun != nil && slices.Contains(r.Rerun.Parts, "discovery") {
		runs = r.Rerun.Runs
	}
	fmt.Fprintf(w, "#### Nomad discovery (calls to the Nomad servers)\n\n")
	fmt.Fprintf(w, "%d routers each watch the replicas' service with `nomad.WatchReplicas`' defaults (blocking service reads of up to 5 s; allocations' checks read at 20 a second per router on average, so up to 100 allocations are read whole every 5 s) against the Nomad stand-in (`nomad/nomadtest`), which counts the API calls. "+
		"Calls per second of all the routers together, counted over %v once every watcher has its set and one blocking wait has passed: median of %d runs [range].\n\n",
		r.Discovery[0].Routers, r.Config.DiscoveryWindow, runs)
	fmt.Fprintf(w, "| replicas | calls/s | checks reads/s | service reads/s | calls/s per router |\n|---|---|---|---|---|\n")
	var x, y []float64
	for _, p := range r.Discovery {
		fmt.Fprintf(w, "| %s | %.1f [%.1f-%.1f] | %.1f | %.2f | %.1f |\n", thousands(p.Replicas), p.CallsPerSec, p.CallsMin, p.CallsMax,
			p.ChecksPerSec, p.ServicesPerSec, p.PerRouterPerSec)
		x, y = append(x, float64(p.Replicas)), append(y, p.CallsPerSec)
	}
	fmt.Fprintf(w, "\nCalls against replicas: %s.\n", growthOf(x, y))
}
