package enginemetrics

import (
	"context"
	"sync"
	"time"
)

// DefaultMaxRate is the default cap on scrapes per second, over all
// targets. One scrape (the /metrics read and parsed, the model listing
// read) costs some hundreds of microseconds of CPU on a busy host
// (docs/BENCHMARKS.md): up to 250 replicas are read every second and a
// fleet of 1,000 every 4 s, for under a fifth of a core with the serving
// side counted, where 1,000 a second took about three quarters.
const DefaultMaxRate = 250

// DefaultMaxConcurrent is the default cap on scrapes in flight at once.
const DefaultMaxConcurrent = 32

// RoundLength is how long one round over n targets lasts: interval, or
// n/maxRate when that is longer (maxRate below 1: no cap).
func RoundLength(interval time.Duration, maxRate, n int) time.Duration {
	if maxRate <= 0 {
		return interval
	}
	return max(interval, time.Duration(n)*time.Second/time.Duration(maxRate))
}

// round scrapes every target once, their starts spread evenly over the
// round's length, at most MaxConcurrent at a time, and returns when the
// round has lasted its length and its scrapes have ended (or ctx ends).
// A scrape that finds every slot taken waits for one: a slow fleet
// stretches the round rather than piling up scrapes.
func (s *Scraper) round(ctx context.Context) {
	targets := s.targets()
	s.forgetGone(targets)
	length := RoundLength(s.opts.Interval, s.opts.MaxRate, len(targets))
	start := time.Now()
	var slots chan struct{}
	if s.opts.MaxConcurrent > 0 {
		slots = make(chan struct{}, s.opts.MaxConcurrent)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(time.Hour) // reset for each wait
	defer timer.Stop()
	for i, tg := range targets {
		if at := start.Add(length * time.Duration(i) / time.Duration(len(targets))); time.Until(at) > 0 {
			timer.Reset(time.Until(at))
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if slots != nil {
			select {
			case <-ctx.Done():
				return
			case slots <- struct{}{}:
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			sample, err := s.scrape(ctx, tg)
			if ctx.Err() != nil {
				return
			}
			s.record(tg, sample, err)
		}()
	}
	if rest := time.Until(start.Add(length)); rest > 0 {
		timer.Reset(rest)
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
}
