package scalebench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/peers"
)

// PeerPoint is peer load sharing's cost for one router among Routers,
// each with requests in flight to all of Replicas replicas, every
// replica's load changing at every publisher tick, so that every message
// lists them all and every peer gets one each peers' Period.
type PeerPoint struct {
	Routers  int `json:"routers"`
	Replicas int `json:"replicas"`
	// NominalPerSec is the messages a router sends (and receives) per
	// second at the publishers' pacing (peers.PublisherOptions.Period);
	// MsgsPerSec what it sent in the runs, which falls short only where
	// the machine cannot keep up.
	NominalPerSec float64 `json:"nominal_msgs_per_s"`
	MsgsPerSec    float64 `json:"msgs_per_s"`
	// MsgBytes is one message's HTTP request as read off the connection,
	// headers included; SentPerRouter the bytes per second one router
	// sends (and receives) at the nominal rate, Fleet all routers'.
	MsgBytes      int     `json:"msg_bytes"`
	SentPerRouter float64 `json:"sent_bytes_per_s"`
	Fleet         float64 `json:"fleet_bytes_per_s"`
	// CPUPerMsgUS is the process's CPU time per message (µs): the
	// publisher's reads of its load, its builds and posts, and the
	// receivers' HTTP, decoding and table updates. FlushUS is one sum
	// handed to the load tracker, which a router does at most every
	// 50 ms.
	CPUPerMsgUS float64 `json:"cpu_us_per_msg"`
	FlushUS     float64 `json:"flush_us"`
	// CorePct is one router's share of a core at the nominal rate, HTTP
	// included (median of the runs, with their range).
	CorePct    float64 `json:"core_pct"`
	CoreMinPct float64 `json:"core_min_pct"`
	CoreMaxPct float64 `json:"core_max_pct"`
}

// peerFlushEvery is router/server's: the table hands the load tracker
// the peers' sum at most this often (peers.Table.SetPublishEvery).
const peerFlushEvery = 50 * time.Millisecond

// fleetLoads are a router's own loads over n replicas with Nomad-length
// ids, every replica in flight: consecutive maps differ on every replica.
func fleetLoads(n int, seed uint64) []map[string]load.Peer {
	rng := rand.New(rand.NewPCG(seed, 5))
	ids := make([]string, n)
	for r := range ids {
		ids[r] = fmt.Sprintf("%08x-%04x-%04x-%04x-%012x/vllm", r, rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint64N(1<<48))
	}
	out := make([]map[string]load.Peer, 4)
	for k := range out {
		m := make(map[string]load.Peer, n)
		for r, id := range ids {
			m[id] = load.Peer{InFlight: 1 + (r+k)%7, InFlightTokens: 1000 + 37*r + 4000*k, PrefillTokens: 13*r + 500*k}
		}
		out[k] = m
	}
	return out
}

// peerPoints is peer sharing's cost at each routers count for each of
// cfg.PeerReplicas, each figure the median of cfg.Runs windows of about
// cfg.PeerWindow (whole periods of the publisher). A single router shares nothing, so counts below 2 are
// left out.
func peerPoints(cfg Config) ([]PeerPoint, error) {
	var out []PeerPoint
	for _, reps := range cfg.PeerReplicas {
		loads := fleetLoads(reps, cfg.Seed)
		flush, err := flushCost(loads)
		if err != nil {
			return nil, err
		}
		for _, n := range cfg.Routers {
			if n < 2 {
				continue
			}
			p, err := peerPoint(n, loads, flush, cfg)
			if err != nil {
				return nil, fmt.Errorf("peer sharing, %d routers × %d replicas: %w", n, reps, err)
			}
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "peers: routers %2d replicas %5d: %5.1f msgs/s (nominal %5.1f), %6d B/msg, %7.1f µs/msg, flush %6.1f µs: %.2f%% of a core [%.2f-%.2f]\n",
					n, reps, p.MsgsPerSec, p.NominalPerSec, p.MsgBytes, p.CPUPerMsgUS, p.FlushUS, p.CorePct, p.CoreMinPct, p.CoreMaxPct)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// peerPoint runs one router's side of a fleet of n (peerSim) and prices
// it at the publishers' pacing: messages at the nominal rate, each at the
// CPU it took, plus one flush per peerFlushEvery while messages arrive
// at least that often.
func peerPoint(n int, loads []map[string]load.Peer, flushUS float64, cfg Config) (PeerPoint, error) {
	sim, err := startPeerSim(n, loads)
	if err != nil {
		return PeerPoint{}, err
	}
	defer sim.close()
	period := peers.PublisherOptions{}.Period(n - 1)
	nominal := float64(n-1) / period.Seconds()
	flushes := min(nominal, float64(time.Second/peerFlushEvery))
	// Messages go out in bursts, one to every peer each period: a window
	// of whole periods holds as many bursts wherever it starts.
	window := max(1, (cfg.PeerWindow+period/2)/period) * period
	if err := sim.warm(); err != nil {
		return PeerPoint{}, err
	}
	var rates, sizes, perMsg, core []float64
	for range cfg.Runs {
		w, err := sim.window(window)
		if err != nil {
			return PeerPoint{}, err
		}
		us := w.cpu.Seconds() * 1e6 / float64(w.msgs)
		rates, sizes, perMsg = append(rates, float64(w.msgs)/w.secs), append(sizes, float64(w.bytes)/float64(w.msgs)), append(perMsg, us)
		core = append(core, (us*nominal+flushUS*flushes)/1e4)
	}
	p := PeerPoint{Routers: n, Replicas: len(loads[0]), NominalPerSec: nominal, MsgsPerSec: median(rates), MsgBytes: int(median(sizes)),
		CPUPerMsgUS: median(perMsg), FlushUS: flushUS, CorePct: median(core), CoreMinPct: slices.Min(core), CoreMaxPct: slices.Max(core)}
	p.SentPerRouter = nominal * float64(p.MsgBytes)
	p.Fleet = p.SentPerRouter * float64(n)
	return p, nil
}

// flushCost is one sum of a peer's loads handed to a load tracker
// (peers.Table.Flush), µs of thread CPU: a table taking messages that
// alternate between loads is timed with a flush after each and without,
// and the difference is the flush.
func flushCost(loads []map[string]load.Peer) (float64, error) {
	msgs := make([]peers.Message, len(loads))
	for k, l := range loads {
		msgs[k] = peers.Message{Version: peers.MinVersion, Router: "router-01"}
		for id, p := range l {
			msgs[k].Replicas = append(msgs[k].Replicas, peers.Replica{ID: id, InFlight: p.InFlight, InFlightTokens: p.InFlightTokens, PrefillTokens: p.PrefillTokens})
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	timed := func(flush bool) (float64, error) {
		tab, err := peers.NewTable("router-00", "scalebench", load.NewTracker(), time.Minute)
		if err != nil {
			return 0, err
		}
		tab.SetPublishEvery(time.Hour)
		const rounds = 64
		c0, err := threadCPU()
		if err != nil {
			return 0, err
		}
		for i := range rounds {
			m := msgs[i%len(msgs)]
			m.Seq = uint64(i) + 1
			tab.Put(m)
			if flush {
				tab.Flush()
			}
		}
		c1, err := threadCPU()
		return float64(c1-c0) / 1e3 / rounds, err
	}
	var diffs []float64
	for range 3 {
		with, err := timed(true)
		if err != nil {
			return 0, err
		}
		without, err := timed(false)
		if err != nil {
			return 0, err
		}
		diffs = append(diffs, max(with-without, 0))
	}
	return median(diffs), nil
}
