package report

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Plot file names, written by Plots.
const (
	TTFTPlot = "ttft-cdf.png"
	HitPlot  = "oracle-hit-share.png"
)

// Plots writes the TTFT CDF of every policy and a bar chart of each
// policy's share of the oracle's reusable tokens into dir, returning the
// files' names.
func (r *Report) Plots(dir string) ([]string, error) {
	if len(r.Policies) == 0 {
		return nil, fmt.Errorf("plot report: no policies")
	}
	if err := r.ttftCDF(filepath.Join(dir, TTFTPlot)); err != nil {
		return nil, fmt.Errorf("plot TTFT CDF: %w", err)
	}
	if err := r.hitBars(filepath.Join(dir, HitPlot)); err != nil {
		return nil, fmt.Errorf("plot oracle hit share: %w", err)
	}
	return []string{TTFTPlot, HitPlot}, nil
}

func (r *Report) ttftCDF(file string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("TTFT, %s workload at %g req/s", r.Workload, r.Rate)
	p.X.Label.Text = "time to first token (ms)"
	p.Y.Label.Text = "share of requests"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	for i, s := range r.Policies {
		if len(s.ttfts) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.ttfts))
		for j, d := range s.ttfts {
			pts[j] = plotter.XY{X: float64(ms(d)), Y: float64(j+1) / float64(len(s.ttfts))}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Policy, l)
	}
	return p.Save(7*vg.Inch, 4*vg.Inch, file)
}

func (r *Report) hitBars(file string) error {
	p := plot.New()
	p.Title.Text = "Cached prompt tokens as a share of the oracle's"
	p.Y.Label.Text = "share of oracle-reusable tokens"
	p.Y.Min, p.Y.Max = 0, 1.05
	vals := make(plotter.Values, len(r.Policies))
	names := make([]string, len(r.Policies))
	for i, s := range r.Policies {
		vals[i], names[i] = s.OracleHitShare, s.Policy
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(40))
	if err != nil {
		return err
	}
	bars.Color = color.RGBA{R: 70, G: 110, B: 180, A: 255}
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	p.NominalX(names...)
	return p.Save(6*vg.Inch, 4*vg.Inch, file)
}
