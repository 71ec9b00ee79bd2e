package report

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Sweep is one workload swept over arrival rates, from light load to past
// the knee: one Report per rate, every policy run at each, in rising rate
// order.
type Sweep struct {
	// Command is the exact command line that produced the sweep.
	Command string `json:"command"`
	Provenance
	Workload string `json:"workload"`
	// Setup describes the fleet and the workload in words.
	Setup string `json:"setup"`
	SLO   SLO    `json:"slo"`
	// Baseline is the policy whose saturation marks the knee
	// (round-robin); Default is llmgw's default; every other policy is a
	// peer's unless Peers lists the peers (then the rest, such as
	// variants of the default, are neither).
	Baseline string   `json:"baseline"`
	Default  string   `json:"default"`
	Peers    []string `json:"peers,omitempty"`
	// Noise is the relative goodput difference within which two policies
	// count as equal (from repeated runs at one rate); a peer ahead of
	// the default by more is listed as a win.
	Noise float64  `json:"noise"`
	Rates []Report `json:"rates"`
	// Seed is the workload seed of this run (0 in sweeps written before
	// they recorded it).
	Seed uint64 `json:"seed,omitempty"`
	// Repeats are other runs of the same sweep (other seeds): the report
	// shows the medians over all runs and their ranges (see Median).
	Repeats []*Sweep `json:"repeats,omitempty"`

	// runs, set only on a Median view, are the runs it summarises.
	runs []*Sweep
}

// JSON is the sweep as indented JSON. A sweep without its provenance
// gets it here (see Provenance.fill).
func (s *Sweep) JSON() ([]byte, error) {
	s.Provenance.fill(time.Now())
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode sweep: %w", err)
	}
	return append(b, '\n'), nil
}

// Knee is the index in Rates of the lowest rate at which the baseline
// saturates: it sheds a request or its TTFT p99 exceeds the SLO's TTFT.
// It is -1 when the baseline never saturates.
func (s *Sweep) Knee() int {
	for i := range s.Rates {
		b, ok := s.Rates[i].policy(s.Baseline)
		if ok && s.saturated(b) {
			return i
		}
	}
	return -1
}

// policy returns the named policy's summary.
func (r *Report) policy(name string) (Summary, bool) {
	for _, p := range r.Policies {
		if p.Policy == name {
			return p, true
		}
	}
	return Summary{}, false
}

// peer reports whether name is a peer policy: listed in Peers, or, when
// Peers is empty, neither the baseline nor the default.
func (s *Sweep) peer(name string) bool {
	if len(s.Peers) > 0 {
		return slices.Contains(s.Peers, name)
	}
	return name != s.Baseline && name != s.Default
}

// Versus is the default against the best peer at one rate.
type Versus struct {
	Rate float64
	// BestPeer is the peer policy with the highest goodput at Rate.
	BestPeer                 string
	BestPeerGoodput, Goodput float64
	Ratio                    float64 // Goodput / BestPeerGoodput (0 when the peer had none)
	// RatioSpread is the ratio run by run over repeated runs (N 1 for
	// one run): a spread that holds 1 is a tie.
	RatioSpread    Spread
	OracleShare    float64 // the default's at Rate
	DefaultMissing bool
	NoPeersRun     bool
}

// Verdict is a sweep's summary: at the knee (the highest rate when the
// baseline never saturates) and at the highest rate, the best peer
// against llmgw's default, and the default's share of the oracle's
// reusable tokens below the knee.
type Verdict struct {
	Versus // at the knee
	// Saturated is false when the baseline never saturated (the knee's
	// figures are then the highest rate's).
	Saturated bool
	Highest   Versus
	// Peers is the default against the best peer at PeersKnee, when
	// PeersSaturated.
	Peers                     Versus
	PeersSaturated            bool
	MinUnsaturatedOracleShare float64 // the default's lowest below the knee (every rate when none)
	UnsaturatedRates          int
	Wins                      []Win // where a peer beat the default by more than Noise
	// Ties are where a peer's median goodput beat the default's by more
	// than Noise but not in every run (repeated runs only).
	Ties        []Win
	HostLimited []string
}

// Win is a rate at which a peer's goodput beat the default's by more than
// the sweep's noise.
type Win struct {
	Rate            float64
	Peer            string
	Goodput, Versus float64
}

// Verdict summarises the sweep (on its medians when it ran more than
// once).
func (s *Sweep) Verdict() Verdict {
	s = s.Median()
	var v Verdict
	if len(s.Rates) == 0 {
		return v
	}
	k := s.Knee()
	v.Saturated = k >= 0
	if k < 0 {
		k = len(s.Rates) - 1
	}
	v.Versus, v.Highest = s.versus(k), s.versus(len(s.Rates)-1)
	if pk := s.PeersKnee(); pk >= 0 {
		v.Peers, v.PeersSaturated = s.versus(pk), true
	}
	v.MinUnsaturatedOracleShare = 1
	for i := range s.Rates {
		r := &s.Rates[i]
		d, _ := r.policy(s.Default)
		if !v.Saturated || i < k {
			v.UnsaturatedRates++
			v.MinUnsaturatedOracleShare = min(v.MinUnsaturatedOracleShare, d.OracleHitShare)
		}
		for _, p := range r.Policies {
			if p.HostLimited() {
				v.HostLimited = append(v.HostLimited, fmt.Sprintf("%s at %g/s (send lag p99 %s)", p.Policy, r.Rate, fmtMs(p.SendLag.P99)))
			}
			if s.peer(p.Policy) && p.Goodput > d.Goodput*(1+s.Noise) {
				w := Win{Rate: r.Rate, Peer: p.Policy, Goodput: p.Goodput, Versus: d.Goodput}
				if s.ratioAt(i, p.Policy).Tie() {
					v.Ties = append(v.Ties, w)
				} else {
					v.Wins = append(v.Wins, w)
				}
			}
		}
	}
	if v.UnsaturatedRates == 0 {
		v.MinUnsaturatedOracleShare = 0
	}
	return v
}

// versus compares the default with the best peer at Rates[k].
func (s *Sweep) versus(k int) Versus {
	at := &s.Rates[k]
	v := Versus{Rate: at.Rate, NoPeersRun: true}
	d, ok := at.policy(s.Default)
	v.DefaultMissing = !ok
	v.Goodput, v.OracleShare = d.Goodput, d.OracleHitShare
	for _, p := range at.Policies {
		if s.peer(p.Policy) && (v.NoPeersRun || p.Goodput > v.BestPeerGoodput) {
			v.BestPeer, v.BestPeerGoodput, v.NoPeersRun = p.Policy, p.Goodput, false
		}
	}
	if v.BestPeerGoodput > 0 {
		v.Ratio = v.Goodput / v.BestPeerGoodput
	}
	if !v.NoPeersRun {
		v.RatioSpread = s.ratioAt(k, v.BestPeer)
	}
	return v
}

// Markdown renders the sweep whole, as its sweep.md: its provenance
// line, the setup, the verdict table, the capacity table, then per rate
// and policy the figures, then plots (image paths relative to the file).
// A sweep with repeats is rendered on its medians, with ranges (Median).
func (s *Sweep) Markdown(plots []string) string { return s.markdown(plots, true) }

// DocMarkdown renders the sweep as a section of docs/BENCHMARKS.md, which
// holds every workload's: as Markdown without the per-rate table, which
// a link to the sweep.md beside the first plot stands for. It is
// compact, one line a paragraph; sweep.json keeps every figure.
func (s *Sweep) DocMarkdown(plots []string) string { return s.markdown(plots, false) }

func (s *Sweep) markdown(plots []string, perRate bool) string {
	var b strings.Builder
	s.Provenance.fill(time.Now())
	s = s.Median()
	loads := make([]float64, len(s.Rates))
	for i, r := range s.Rates {
		loads[i] = r.HostLoad
	}
	b.WriteString(s.line(s.Command, loadConditions(s.Machine, loads, "each rate")))
	b.WriteString("\n")
	s.writeSetup(&b)
	v := s.Verdict()
	s.writeVerdict(&b, v)
	writeCapacity(&b, perRate, s.Runs()...)
	if perRate {
		s.writeRates(&b)
	} else if len(plots) > 0 {
		fmt.Fprintf(&b, "Every policy's figures at every rate: [sweep.md](%s).\n", path.Join(path.Dir(plots[0]), "sweep.md"))
	}
	if len(plots) > 0 {
		b.WriteString("\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(p[strings.LastIndex(p, "/")+1:], ".png"), p)
		}
	}
	return b.String()
}

// writeSetup writes the workload at each rate, the oracle's bound there,
// and what goodput and the knees mean.
func (s *Sweep) writeSetup(b *strings.Builder) {
	rates := make([]string, len(s.Rates))
	sizes := make([]string, len(s.Rates))
	oracle := make([]string, len(s.Rates))
	same := true
	for i, r := range s.Rates {
		rates[i] = fmt.Sprintf("%g", r.Rate)
		sizes[i] = fmt.Sprintf("%d", r.Requests)
		oracle[i] = pct(float64(r.ReusableTokens) / float64(max(r.PromptTokens, 1)))
		same = same && r.Requests == s.Rates[0].Requests
	}
	if runs := s.Runs(); len(runs) > 1 {
		seeds := make([]string, len(runs))
		for i, run := range runs {
			seeds[i] = fmt.Sprintf("%d", run.Seed)
		}
		seeded := ", the workload seeded " + strings.Join(seeds, ", ")
		if slices.ContainsFunc(runs, func(r *Sweep) bool { return r.Seed == 0 }) {
			seeded = " (seeds not recorded)"
		}
		fmt.Fprintf(b, "%d runs%s; the figures are their medians. ", len(runs), seeded)
	}
	if same && len(s.Rates) > 0 {
		fmt.Fprintf(b, "Workload `%s`: %d requests at each of %s req/s; %s.\n", s.Workload, s.Rates[0].Requests, strings.Join(rates, ", "), s.Setup)
	} else {
		fmt.Fprintf(b, "Workload `%s`: %s requests at %s req/s; %s.\n", s.Workload, strings.Join(sizes, ", "), strings.Join(rates, ", "), s.Setup)
	}
	fmt.Fprintf(b, "The oracle (the bound, not a run) could reuse %s of the prompt tokens at these rates. ", strings.Join(oracle, ", "))
	fmt.Fprintf(b, "Goodput counts requests with TTFT <= %s and mean inter-token gap <= %s, per second of the run. The knee is the lowest rate where `%s` sheds or its TTFT p99 exceeds %s; the peers' knee the lowest where every peer policy does. A peer counts as ahead of the default (`%s`) when its goodput is more than %.0f%% higher.\n\n",
		s.SLO.TTFT, s.SLO.ITL, s.Baseline, s.SLO.TTFT, s.Default, 100*s.Noise)
}

// writeVerdict writes the default against the best peer at the knees and
// the highest rate, then the oracle share below the knee, the peers'
// wins, the capacity ratio and the host-limited runs in one paragraph.
func (s *Sweep) writeVerdict(b *strings.Builder, v Verdict) {
	knee := fmt.Sprintf("%g req/s", v.Rate)
	if !v.Saturated {
		knee = fmt.Sprintf("not reached (figures at %g req/s)", v.Rate)
	}
	b.WriteString("| at | best peer | its goodput | default's goodput | default / best peer | default's share of oracle |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|\n")
	row := func(label string, x Versus) {
		best, bestGood, ratio := x.BestPeer, fmt.Sprintf("%.2f req/s", x.BestPeerGoodput), fmt.Sprintf("%.2fx", x.Ratio)
		if r := x.RatioSpread; r.N > 1 {
			ratio = fmt.Sprintf("%.2fx (%.2f-%.2f)", r.Median, r.Min, r.Max)
			if r.Tie() {
				ratio += ", a tie"
			}
		}
		if x.NoPeersRun {
			best, bestGood, ratio = "no peer run", "", ""
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.2f req/s | %s | %s |\n", label, best, bestGood, x.Goodput, ratio, pct(x.OracleShare))
	}
	row("the knee, "+knee, v.Versus)
	if v.PeersSaturated && v.Peers.Rate != v.Rate {
		row(fmt.Sprintf("the peers' knee, %g req/s", v.Peers.Rate), v.Peers)
	}
	if v.Highest.Rate != v.Rate && (!v.PeersSaturated || v.Highest.Rate != v.Peers.Rate) {
		row(fmt.Sprintf("the highest rate, %g req/s", v.Highest.Rate), v.Highest)
	}
	wins := "none"
	if len(v.Wins) > 0 {
		wins = winList(v.Wins)
	}
	if len(v.Ties) > 0 {
		wins += "; ahead on the median but not in every run (ties): " + winList(v.Ties)
	}
	below := "no rate below the knee"
	if v.UnsaturatedRates > 0 {
		below = pct(v.MinUnsaturatedOracleShare)
	}
	fmt.Fprintf(b, "\nThe default's lowest share of the oracle's reusable tokens below the knee: %s. Peers ahead of the default at any rate: %s. ", below, wins)
	b.WriteString(s.capacityRatioSentence())
	if len(v.HostLimited) > 0 {
		fmt.Fprintf(b, "Host-limited runs (the client sent late, send lag p99 over %s): %s.\n\n", HostLimitLag, strings.Join(v.HostLimited, "; "))
	} else {
		fmt.Fprintf(b, "No run was host-limited: the client's send lag p99 stayed within %s of the schedule everywhere.\n\n", HostLimitLag)
	}
}

// winList lists where peers led the default, one "peer at rate (its
// goodput vs the default's)" each.
func winList(wins []Win) string {
	w := make([]string, len(wins))
	for i, x := range wins {
		w[i] = fmt.Sprintf("%s at %g/s (%.2f vs %.2f req/s)", x.Peer, x.Rate, x.Goodput, x.Versus)
	}
	return strings.Join(w, "; ")
}

// writeRates writes every policy's figures at every rate; over repeated
// runs the medians, with the ranges of goodput, TTFT p90 and share of the
// oracle.
func (s *Sweep) writeRates(b *strings.Builder) {
	if n := len(s.Runs()); n > 1 {
		fmt.Fprintf(b, "Per rate, the median of the %d runs; goodput, TTFT p90 and share of the oracle with their range; the send lag the worst run's. ", n)
	}
	b.WriteString("Prefix copies are the prompts the routers sent on their own to copy a hot prefix to an idle replica (- where not read).\n\n")
	b.WriteString("| rate | policy | TTFT p50 | TTFT p90 | TTFT p99 | ITL p99 | goodput | shed | interrupted | cached share | of oracle | busiest replica | prefix copies | send lag p99 |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range s.Rates {
		for _, p := range r.Policies {
			good := s.spreadAt(i, p.Policy, func(x Summary) float64 { return x.Goodput })
			p90 := s.spreadAt(i, p.Policy, func(x Summary) float64 { return float64(x.TTFT.P90) })
			oracle := s.spreadAt(i, p.Policy, func(x Summary) float64 { return x.OracleHitShare })
			fmt.Fprintf(b, "| %g | %s | %s | %s | %s | %s | %s (%s) | %d | %d | %s | %s | %s | %s | %s |\n",
				r.Rate, p.Policy, fmtMs(p.TTFT.P50), p90Spread(p90), fmtMs(p.TTFT.P99), fmtMs(p.ITL.P99), good.Format(hundredths, " req/s"),
				pct(p.GoodputShare), p.Shed, p.Interrupted, pct(p.CachedShare), pctSpread(oracle), pct(p.BusiestShare), fmtCount(p.Copies), fmtMs(p.SendLag.P99))
		}
	}
}

// policies are the policy names in the order they first ran.
func (s *Sweep) policies() []string {
	var names []string
	for _, r := range s.Rates {
		for _, p := range r.Policies {
			if !slices.Contains(names, p.Policy) {
				names = append(names, p.Policy)
			}
		}
	}
	return names
}
