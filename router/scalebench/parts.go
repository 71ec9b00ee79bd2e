package scalebench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Parts are the sweeps that run alone (`bench-scale -only`), in the
// order Run runs them after the decision's axes.
var Parts = []string{"peers", "snapshots", "discovery"}

// Rerun records a later run of some parts into saved results.
type Rerun struct {
	Parts   []string `json:"parts"`
	Label   string   `json:"label"`
	Runs    int      `json:"runs"`
	Machine Machine  `json:"machine"`
	Took    float64  `json:"took_s"`
}

// ParseParts reads a comma-separated list of Parts.
func ParseParts(list string) ([]string, error) {
	var out []string
	for p := range strings.SplitSeq(list, ",") {
		if p = strings.TrimSpace(p); !slices.Contains(Parts, p) {
			return nil, fmt.Errorf("%q is not a part that runs alone (%s)", p, strings.Join(Parts, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// RunPart measures one of Parts with r.Config into r.
func (r *Results) RunPart(ctx context.Context, part string) error {
	var err error
	switch part {
	case "peers":
		r.Peers, err = peerPoints(r.Config)
	case "snapshots":
		if r.Snapshots, err = SnapshotSweep(r.Config); err == nil && r.Config.Log != nil {
			join, resync := SnapshotGrowth(r.Snapshots)
			fmt.Fprintf(r.Config.Log, "snapshot apply against replicas: join %s, resync %s\n", join, resync)
		}
	case "discovery":
		r.Discovery, err = DiscoverySweep(ctx, r.Config)
	default:
		err = fmt.Errorf("no part %q", part)
	}
	return err
}

// RunParts measures parts with cfg into r, keeping the rest of r, and
// records the run (Rerun). cfg's axes for those parts replace r's.
func (r *Results) RunParts(ctx context.Context, cfg Config, parts []string, label string) error {
	start := time.Now()
	rr := &Rerun{Parts: parts, Label: label, Machine: Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(),
		LoadBefore: loadAvg(), Date: start.UTC().Format("2006-01-02 15:04 UTC")}}
	rr.Runs = cfg.Runs
	runs := r.Config.Runs // the decision's, which the report states
	r.Config.Runs, r.Config.Log = cfg.Runs, cfg.Log
	defer func() { r.Config.Runs, r.Config.Log = runs, nil }()
	for _, p := range parts {
		switch p {
		case "peers":
			r.Config.Routers, r.Config.PeerReplicas, r.Config.PeerWindow = cfg.Routers, cfg.PeerReplicas, cfg.PeerWindow
		case "snapshots":
			r.Config.Snapshots = cfg.Snapshots
		case "discovery":
			r.Config.Discovery, r.Config.DiscoveryRouters, r.Config.DiscoveryWindow = cfg.Discovery, cfg.DiscoveryRouters, cfg.DiscoveryWindow
		}
		if err := r.RunPart(ctx, p); err != nil {
			return err
		}
	}
	rr.Machine.LoadAfter, rr.Took = loadAvg(), time.Since(start).Seconds()
	r.Rerun = rr
	return nil
}

// partNames names parts for the report: "Peer sharing and Nomad
// discovery".
func partNames(parts []string) string {
	names := map[string]string{"peers": "peer sharing", "snapshots": "snapshot apply (in results.json)", "discovery": "Nomad discovery"}
	var out []string
	for _, p := range parts {
		out = append(out, names[p])
	}
	s := strings.Join(out, ", ")
	if i := strings.LastIndex(s, ", "); i >= 0 {
		s = s[:i] + " and " + s[i+2:]
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteParts prints the tables of parts.
func (r *Results) WriteParts(w io.Writer, parts []string) {
	for _, p := range parts {
		switch p {
		case "peers":
			r.peerSection(w)
		case "snapshots":
			WriteSnapshots(w, r.Snapshots)
		case "discovery":
			r.discoverySection(w)
		}
		fmt.Fprintln(w)
	}
}
