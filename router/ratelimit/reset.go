package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatReset writes a reset duration as OpenAI does: Go's duration form
// at millisecond precision, rounded up so a client never retries early
// ("1s", "6m0s", "17.5s", "250ms", "0s").
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return (d + time.Millisecond - 1).Truncate(time.Millisecond).String()
}

// maxReset bounds what ParseReset accepts: a day is far beyond any reset.
const maxReset = 24 * time.Hour

// ParseReset reads a reset duration as OpenAI's headers write it, which
// is what a client of the router does: decimal numbers, each with a unit
// of h, m, s or ms, largest first ("6m0s", "1.5s", "20ms"). It rejects
// anything else, and durations over a day, with an error that names the
// problem.
func ParseReset(s string) (time.Duration, error) {
	if s == "" {
		return 0, errors.New("reset: empty")
	}
	if len(s) > 64 {
		return 0, fmt.Errorf("reset: %d bytes is too long for a duration", len(s))
	}
	units := []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}}
	var total time.Duration
	next := 0 // the units before next were used
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("reset %q: want a number at %q", s, rest)
		}
		whole, frac, _ := strings.Cut(rest[:i], ".")
		if whole == "" || len(whole) > 6 || len(frac) > 6 || strings.Contains(frac, ".") || strings.HasSuffix(rest[:i], ".") {
			return 0, fmt.Errorf("reset %q: bad number %q", s, rest[:i])
		}
		rest = rest[i:]
		u := -1
		for k := next; k < len(units); k++ {
			// "ms" before "m": the longer unit wins where both fit.
			if name := units[k].name; len(rest) >= len(name) && rest[:len(name)] == name &&
				!(name == "m" && len(rest) > 1 && rest[1] == 's') {
				u = k
				break
			}
		}
		if u < 0 {
			return 0, fmt.Errorf("reset %q: want a unit h, m, s or ms, largest first, at %q", s, rest)
		}
		total += exact(whole, frac, units[u].d)
		rest = rest[len(units[u].name):]
		next = u + 1
		if total > maxReset {
			return 0, fmt.Errorf("reset %q: over %s", s, maxReset)
		}
	}
	return total, nil
}

// exact is whole.frac units without floating point: whole has at most 6
// digits and frac at most 6, so nothing overflows.
func exact(whole, frac string, unit time.Duration) time.Duration {
	w, _ := strconv.ParseInt(whole, 10, 64)
	d := time.Duration(w) * unit
	scale := time.Duration(1)
	for range len(frac) {
		scale *= 10
	}
	if frac != "" {
		f, _ := strconv.ParseInt(frac, 10, 64)
		d += time.Duration(f) * unit / scale
	}
	return d
}
