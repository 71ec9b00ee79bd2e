package enginemetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Target is one replica's metrics endpoint.
type Target struct {
	ID  string // replica id
	URL string // e.g. http://10.0.0.5:8000/metrics
	// ModelsURL, when set, is the replica's model listing (vLLM's
	// /v1/models), read after each successful scrape for its LoRA adapters.
	ModelsURL string
	// APIKey, when set, is sent as a bearer token on both: an engine
	// started with vLLM's --api-key refuses its /v1 paths without it.
	APIKey string
}

// Sink receives each successful scrape (load.Tracker's SetScraped plus
// whatever the router records about capacity).
type Sink interface {
	Scraped(replica string, s Sample)
}

// Options tune a Scraper; zero values take the defaults.
type Options struct {
	// Interval between scrape rounds (default 1 s).
	Interval time.Duration
	// Timeout of one scrape (default Interval).
	Timeout time.Duration
	// MaxBytes caps a response body (default 4 MiB).
	MaxBytes int64
	// MaxRate caps the scrapes started per second over all targets, so
	// the CPU they cost stays bounded however large the fleet: with more
	// targets than Interval × MaxRate, a round takes targets/MaxRate
	// instead of Interval. 0 takes DefaultMaxRate; below 0 there is no
	// cap.
	MaxRate int
	// MaxConcurrent caps the scrapes in flight at once (0 takes
	// DefaultMaxConcurrent; below 0 there is no cap).
	MaxConcurrent int
	Client        *http.Client
	Logger        hclog.Logger
}

// Scraper scrapes every target once a round: a round lasts Interval, or
// longer when MaxRate needs it, and its scrapes start evenly spread over
// it, at most MaxConcurrent at a time, rather than all at its start. A
// failed scrape is logged and the target's last sample stays in the sink.
type Scraper struct {
	targets func() []Target
	sink    Sink
	opts    Options

	cancel  context.CancelFunc
	stopped chan struct{}

	mu       sync.Mutex
	failures map[string]int  // consecutive failures per target, for logging
	refused  map[string]bool // targets whose engine refused the key, warned once
}

// Start begins scraping the targets returned by targets (asked each round,
// so replicas joining or leaving are followed) into sink. Close stops it.
func Start(ctx context.Context, targets func() []Target, sink Sink, opts Options) (*Scraper, error) {
	if targets == nil || sink == nil {
		return nil, errors.New("start scraper: nil targets or sink")
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = opts.Interval
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4 << 20
	}
	if opts.MaxRate == 0 {
		opts.MaxRate = DefaultMaxRate
	}
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.Client == nil {
		opts.Client = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Scraper{targets: targets, sink: sink, opts: opts, cancel: cancel, stopped: make(chan struct{}), failures: map[string]int{}, refused: map[string]bool{}}
	go s.run(ctx)
	return s, nil
}

// Close stops scraping and waits for in-flight scrapes to end.
func (s *Scraper) Close() {
	s.cancel()
	<-s.stopped
}

func (s *Scraper) run(ctx context.Context) {
	defer close(s.stopped)
	for ctx.Err() == nil {
		s.round(ctx)
	}
}

func (s *Scraper) scrape(ctx context.Context, tg Target) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var sample Sample
	err := s.get(ctx, tg, tg.URL, "text/plain;version=0.0.4", func(r io.Reader) (err error) {
		sample, err = Parse(r)
		return err
	})
	if err != nil || tg.ModelsURL == "" {
		return sample, err
	}
	// The listing is optional: without it the adapters stay as they were.
	err = s.get(ctx, tg, tg.ModelsURL, "application/json", func(r io.Reader) (err error) {
		sample.Adapters, err = ParseAdapters(r)
		return err
	})
	sample.AdaptersKnown = err == nil
	if err == nil || errors.Is(err, errUnauthorized) {
		s.noteRefusal(tg, err != nil)
	}
	if err != nil {
		s.opts.Logger.Debug("model listing unavailable; keeping the replica's adapters", "replica", tg.ID, "error", err)
	}
	return sample, nil
}

// get fetches url of tg and hands the body, capped at MaxBytes, to parse.
func (s *Scraper) get(ctx context.Context, tg Target, url, accept string, parse func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", accept)
	if tg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+tg.APIKey)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("scrape %s: %w", url, errUnauthorized)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	lr := &countingReader{r: io.LimitReader(resp.Body, s.opts.MaxBytes+1)}
	err = parse(lr)
	if lr.n > s.opts.MaxBytes {
		return fmt.Errorf("scrape %s: body exceeds %d bytes", url, s.opts.MaxBytes)
	}
	if err != nil {
		return fmt.Errorf("scrape %s: %w", url, err)
	}
	return nil
}

func (s *Scraper) record(tg Target, sample Sample, err error) {
	s.mu.Lock()
	n := s.failures[tg.ID]
	if err != nil {
		s.failures[tg.ID] = n + 1
	} else {
		delete(s.failures, tg.ID)
	}
	s.mu.Unlock()
	if err != nil {
		if n == 0 || (n+1)%60 == 0 { // first failure, then about once a minute
			s.opts.Logger.Warn("metrics scrape failed; keeping the last sample", "replica", tg.ID, "error", err, "consecutive", n+1)
		}
		return
	}
	s.sink.Scraped(tg.ID, sample)
}

// forgetGone drops failure counts of targets no longer listed.
func (s *Scraper) forgetGone(targets []Target) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) == 0 && len(s.refused) == 0 {
		return
	}
	live := make(map[string]bool, len(targets))
	for _, t := range targets {
		live[t.ID] = true
	}
	for id := range s.failures {
		if !live[id] {
			delete(s.failures, id)
		}
	}
	for id := range s.refused {
		if !live[id] {
			delete(s.refused, id)
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// SinkFunc adapts a function to Sink, e.g. to feed load.Tracker:
//
//	enginemetrics.SinkFunc(func(id string, s enginemetrics.Sample) {
//		tracker.SetScraped(id, s.Waiting, s.Running, s.KVUsage)
//	})
type SinkFunc func(replica string, s Sample)

// Scraped calls f.
func (f SinkFunc) Scraped(replica string, s Sample) { f(replica, s) }
