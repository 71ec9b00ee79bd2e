package server

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderDPRank pins a request to one data-parallel rank, as vLLM's API
// server reads it (OpenAIServing._get_data_parallel_rank); the router
// sends it for the rank it predicted the prompt's cached prefix on.
const HeaderDPRank = "X-data-parallel-rank"

// statsInterval is how often vLLM's DP coordinator publishes the ranks'
// waiting and running counts while they change (coordinator.py: 100 ms,
// every 3 s otherwise); between publishes the API server counts its own
// choices locally.
const statsInterval = 100 * time.Millisecond

type dpRankKey struct{}

// withDPRank returns ctx carrying the rank r's header pins, if it names
// one. Like vLLM, a header that is not an integer pins nothing; an
// integer out of range is refused when the request is submitted (pick).
func withDPRank(ctx context.Context, r *http.Request) context.Context {
	v := r.Header.Get(HeaderDPRank)
	if v == "" {
		return ctx
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, dpRankKey{}, n)
}

// dpRankOf is the rank ctx's request pinned, if any.
func dpRankOf(ctx context.Context) (int, bool) {
	n, ok := ctx.Value(dpRankKey{}).(int)
	return n, ok
}

// rankStats is what the balancer knows of one rank: the coordinator's
// last published counts plus this server's own choices since then, and
// the KV-cache usage.
type rankStats struct {
	waiting, running float64
	kvUsage          float64
}

// balancer picks a data-parallel rank for each request as vLLM's
// DPLBAsyncMPClient.get_core_engine_for_request does for one API server
// (client_count 1): a pinned rank is taken as is; otherwise each rank
// scores max(in-flight, waiting+running), plus waiting*6*(kv_usage-0.5)
// when waiting and over half full, and the lowest score wins, scanning
// from a start index that rotates by one on every unpinned choice so ties
// do not always go to the same rank. The counts are the coordinator's
// snapshot, refreshed every statsInterval; the chosen rank's waiting count
// goes up by one until the next snapshot. In-flight counts are exact:
// up on every submission, pinned or not, down as the request leaves.
type balancer struct {
	// read is rank i's state as its engine reports it to the coordinator.
	read     func(i int) rankStats
	interval time.Duration
	now      func() time.Time

	mu        sync.Mutex
	start     int
	stats     []rankStats
	inflight  []int
	published time.Time
}

func newBalancer(n int, read func(i int) rankStats) *balancer {
	return &balancer{read: read, interval: statsInterval, now: time.Now,
		stats: make([]rankStats, n), inflight: make([]int, n)}
}

// engineStats reads rank i's engine.
func engineStats(ranks []Rank) func(i int) rankStats {
	return func(i int) rankStats {
		w, run, usage := ranks[i].Engine.Stats()
		return rankStats{waiting: float64(w), running: float64(run), kvUsage: usage}
	}
}

// pick chooses the rank for a request of ctx and counts it in flight
// there; the caller calls the returned leave once the request has left the
// engine (or was never submitted).
func (b *balancer) pick(ctx context.Context) (int, func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx, pinned := dpRankOf(ctx)
	if pinned && (idx < 0 || idx >= len(b.stats)) {
		return 0, nil, badRequest("data_parallel_rank %d is out of range [0, %d).", idx, len(b.stats))
	}
	if !pinned {
		idx = b.leastLoaded()
	}
	b.inflight[idx]++
	var once sync.Once
	leave := func() {
		once.Do(func() {
			b.mu.Lock()
			b.inflight[idx]--
			b.mu.Unlock()
		})
	}
	return idx, leave, nil
}

// leastLoaded is vLLM's unpinned choice; b.mu is held.
func (b *balancer) leastLoaded() int {
	b.refresh()
	n := len(b.stats)
	best, bestScore := 0, math.MaxFloat64
	for i := range n {
		idx := (b.start + i) % n
		s := b.stats[idx]
		score := max(float64(b.inflight[idx]), s.waiting+s.running)
		if s.waiting > 0 {
			score += s.waiting * 6 * max(0, s.kvUsage-0.5)
		}
		if score < bestScore {
			best, bestScore = idx, score
		}
	}
	b.stats[best].waiting++
	b.start = (b.start + 1) % n
	return best
}

// refresh takes the coordinator's next snapshot of the engines once
// interval has passed since the last; b.mu is held.
func (b *balancer) refresh() {
	now := b.now()
	if now.Sub(b.published) < b.interval {
		return
	}
	b.published = now
	for i := range b.stats {
		b.stats[i] = b.read(i)
	}
}
