package report

import (
	"fmt"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// SweepPlot is the file name of a sweep's plot: goodput against rate and
// the share of the oracle's reusable tokens against rate, every policy.
const SweepPlot = "sweep.png"

// Plot writes the sweep's plot into file: two panels side by side, one
// line per policy in each (the medians over repeated runs).
func (s *Sweep) Plot(file string) error {
	s = s.Median()
	if len(s.Rates) == 0 {
		return fmt.Errorf("plot sweep: no rates")
	}
	good, err := s.panel(fmt.Sprintf("Goodput, %s (TTFT <= %s, ITL <= %s)", s.Workload, s.SLO.TTFT, s.SLO.ITL), "goodput (req/s)",
		func(p Summary) float64 { return p.Goodput })
	if err != nil {
		return fmt.Errorf("plot sweep: %w", err)
	}
	share, err := s.panel(fmt.Sprintf("Share of the oracle's reusable tokens, %s", s.Workload), "cached / oracle-reusable tokens",
		func(p Summary) float64 { return p.OracleHitShare })
	if err != nil {
		return fmt.Errorf("plot sweep: %w", err)
	}
	// Headroom above the lines for the legend.
	good.Y.Max *= 1.6
	share.Y.Min, share.Y.Max = 0, 1.6
	img := vgimg.New(14*vg.Inch, 5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{good, share}}, tiles, dc)
	good.Draw(canvases[0][0])
	share.Draw(canvases[0][1])
	fh, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("plot sweep: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(fh); err != nil {
		fh.Close()
		return fmt.Errorf("plot sweep: write %s: %w", file, err)
	}
	return fh.Close()
}

// panel plots value against rate, one line (with points) per policy.
func (s *Sweep) panel(title, ylabel string, value func(Summary) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "offered rate (req/s)"
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	for i, name := range s.policies() {
		var pts plotter.XYs
		for _, r := range s.Rates {
			if sum, ok := r.policy(name); ok {
				pts = append(pts, plotter.XY{X: r.Rate, Y: value(sum)})
			}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / len(plotutil.SoftColors)) // colours repeat after seven
		l.Width = vg.Points(1.5)
		if name == s.Default {
			l.Width = vg.Points(3)
		}
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(name, l, sc)
	}
	return p, nil
}
