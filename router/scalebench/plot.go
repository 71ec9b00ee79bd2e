package scalebench

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one curve of a plot.
type series struct {
	name string
	x, y []float64
}

// chart is one plot: log-scaled axes, a line with points per series.
type chart struct {
	file, title, xLabel, yLabel string
	logY                        bool
	series                      []series
}

// save writes the chart as a PNG into dir. Points with a non-positive
// coordinate are left out (a log axis has no place for them).
func (c chart) save(dir string) error {
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text, p.Y.Label.Text = c.xLabel, c.yLabel
	if c.points() == 0 {
		return fmt.Errorf("plot %s: no point to plot", c.file)
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	if c.logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	} else {
		p.Y.Min = 0
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	for i, s := range c.series {
		var pts plotter.XYs
		for j := range s.x {
			if s.x[j] > 0 && s.y[j] > 0 {
				pts = append(pts, plotter.XY{X: s.x[j], Y: s.y[j]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %s: %w", c.file, err)
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		l.Width = vg.Points(1.5)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, filepath.Join(dir, c.file)); err != nil {
		return fmt.Errorf("plot %s: %w", c.file, err)
	}
	return nil
}

// points counts the points save plots.
func (c chart) points() (n int) {
	for _, s := range c.series {
		for j := range s.x {
			if s.x[j] > 0 && s.y[j] > 0 {
				n++
			}
		}
	}
	return n
}

// column picks one figure of each point.
func column(ps []Point, f func(Point) float64) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = f(p)
	}
	return out
}

// charts are the sweep's plots.
func (r *Results) charts() []chart {
	reps := column(r.Replicas, func(p Point) float64 { return float64(p.Replicas) })
	blocks := column(r.Blocks, func(p Point) float64 { return float64(p.Keys) })
	tokens := column(r.Tokens, func(p Point) float64 { return float64(p.Tokens) })
	decision := func(x []float64, ps []Point) []series {
		return []series{
			{"p50", x, column(ps, func(p Point) float64 { return p.P50 })},
			{"p99", x, column(ps, func(p Point) float64 { return p.P99 })},
			{"CPU p99", x, column(ps, func(p Point) float64 { return p.CPUP99 })},
			{"p50, one prompt repeated", x, column(ps, func(p Point) float64 { return p.WarmP50 })},
			{"floor (hash + dependent loads)", x, column(ps, func(p Point) float64 { return p.Floor })},
			{"MLP floor (hash + independent loads)", x, column(ps, func(p Point) float64 { return p.Hash + p.Gather })},
		}
	}
	heap := func(p Point) float64 { return p.HeapPerBlock }
	ing := func(p Point) float64 { return p.IngestPerCore }
	out := []chart{
		{"decision-replicas.png", fmt.Sprintf("Decision vs replicas (%s blocks, %s-token prompt)", thousands(r.Config.BaseBlocks), thousands(r.Config.BaseTokens)),
			"replicas of the model", "µs", true, decision(reps, r.Replicas)},
		{"decision-blocks.png", fmt.Sprintf("Decision vs indexed blocks (%d replicas, %s-token prompt)", r.Config.BaseReplicas, thousands(r.Config.BaseTokens)),
			"indexed blocks", "µs", true, decision(blocks, r.Blocks)},
		{"decision-prompt.png", fmt.Sprintf("Decision vs prompt length (%d replicas, %s blocks)", r.Config.BaseReplicas, thousands(r.Config.BaseBlocks)),
			"prompt tokens", "µs", true, decision(tokens, r.Tokens)},
		{"memory.png", "Router heap per indexed block", "replicas or indexed blocks", "bytes per block", false, []series{
			{"vs replicas", reps, column(r.Replicas, heap)}, {"vs indexed blocks", blocks, column(r.Blocks, heap)}}},
		{"ingest.png", "KV ingest (decode + apply) per core", "replicas or indexed blocks", "block events per CPU-second", false, []series{
			{"vs replicas", reps, column(r.Replicas, ing)}, {"vs indexed blocks", blocks, column(r.Blocks, ing)}}},
	}
	peer := chart{file: "peers.png", title: "Peer load sharing, one router, load changing every tick (HTTP included)", xLabel: "routers",
		yLabel: "% of a core per router", logY: true}
	for _, reps := range r.Config.PeerReplicas {
		s := series{name: fmt.Sprintf("%s replicas per message", thousands(reps))}
		for _, p := range r.Peers {
			if p.Replicas == reps {
				s.x, s.y = append(s.x, float64(p.Routers)), append(s.y, p.CorePct)
			}
		}
		peer.series = append(peer.series, s)
	}
	out = append(out, peer)
	if len(r.Discovery) > 0 {
		s := series{name: fmt.Sprintf("%d routers, calls per second", r.Discovery[0].Routers)}
		for _, p := range r.Discovery {
			s.x, s.y = append(s.x, float64(p.Replicas)), append(s.y, p.CallsPerSec)
		}
		out = append(out, chart{file: "discovery.png", title: "Nomad discovery: API calls to the Nomad servers", xLabel: "replicas",
			yLabel: "calls per second", series: []series{s}})
	}
	return out
}

// Plots writes the sweep's PNG plots into dir and returns their names.
func (r *Results) Plots(dir string) ([]string, error) {
	var names []string
	for _, c := range r.charts() {
		if err := c.save(dir); err != nil {
			return nil, err
		}
		names = append(names, c.file)
	}
	return names, nil
}
