package scalebench

import (
	"fmt"
	"math"
)

// Growth is how a curve grows with its axis, read off a least-squares
// fit: the slope of log y against log x, and which of y = a, y = a + b·ln
// x and y = a + b·x fits best.
type Growth struct {
	Slope float64 // d ln y / d ln x
	Class string  // falling, constant, logarithmic, linear or super-linear
}

func (g Growth) String() string { return fmt.Sprintf("%s (log-log slope %.2f)", g.Class, g.Slope) }

// growthOf classifies y over x (both positive). A log-log slope under
// -0.15 is falling, one within ±0.15 constant and one over 1.3
// super-linear; between, logarithmic
// when a + b·ln x fits with less squared relative error than a + b·x,
// else linear (a linear cost with a large constant part has a log-log
// slope well under 1).
func growthOf(x, y []float64) Growth {
	var lx, ly []float64
	var xs, ys []float64
	for i := range x {
		if x[i] > 0 && y[i] > 0 {
			lx, ly = append(lx, math.Log(x[i])), append(ly, math.Log(y[i]))
			xs, ys = append(xs, x[i]), append(ys, y[i])
		}
	}
	if len(xs) < 2 {
		return Growth{Class: "too few points"}
	}
	s, _ := fit(lx, ly)
	g := Growth{Slope: s}
	switch {
	case s < -0.15:
		g.Class = "falling"
	case s <= 0.15:
		g.Class = "constant"
	case s > 1.3:
		g.Class = "super-linear"
	case relErr(lx, ys) < relErr(xs, ys):
		g.Class = "logarithmic"
	default:
		g.Class = "linear"
	}
	return g
}

// fit is the least-squares line y = a·x + b.
func fit(x, y []float64) (a, b float64) {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx, sy, sxx, sxy = sx+x[i], sy+y[i], sxx+x[i]*x[i], sxy+x[i]*y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0, sy / n
	}
	a = (n*sxy - sx*sy) / d
	return a, (sy - a*sx) / n
}

// relErr is the squared relative error of y's least-squares line over x.
func relErr(x, y []float64) float64 {
	a, b := fit(x, y)
	e := 0.0
	for i := range x {
		r := (a*x[i] + b - y[i]) / y[i]
		e += r * r
	}
	return e
}
