package scalebench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/llmgw/llmgw/router/peers"
)

// peerTick is how often a router whose load changes publishes it
// (router/peers' default PublisherOptions.Interval): while load changes,
// every peer gets a message per tick.
const peerTick = 50 * time.Millisecond

// PeerPoint is peer load sharing's cost for one router among Routers,
// each with requests in flight to Replicas replicas, while load changes
// at every tick: each router sends its message to the Routers-1 others
// and decodes theirs.
type PeerPoint struct {
	Routers  int `json:"routers"`
	Replicas int `json:"replicas"`
	// MsgBytes is one message's body as router/peers encodes it.
	MsgBytes int `json:"msg_bytes"`
	// SentPerRouter is the bytes per second one router sends (and, by
	// symmetry, receives); Fleet all routers' together.
	SentPerRouter float64 `json:"sent_bytes_per_s"`
	Fleet         float64 `json:"fleet_bytes_per_s"`
	// EncodeUS and DecodeUS are one message's CPU time (µs, medians of the
	// runs); CorePct is one router's share of a core for encoding its
	// message and decoding its peers' once a tick (HTTP not included).
	EncodeUS float64 `json:"encode_us"`
	DecodeUS float64 `json:"decode_us"`
	CorePct  float64 `json:"core_pct"`
}

// peerMessage is a router's load message over replicas, with
// Nomad-length replica ids and non-zero counts.
func peerMessage(replicas int, seed uint64) peers.Message {
	rng := rand.New(rand.NewPCG(seed, 5))
	m := peers.Message{Version: peers.MinVersion, Router: "router-00/llmgw-router", Seq: 1}
	for r := range replicas {
		id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x/vllm", r, rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint32N(1<<16), rng.Uint64N(1<<48))
		m.Replicas = append(m.Replicas, peers.Replica{ID: id, InFlight: 1 + rng.IntN(16), InFlightTokens: rng.IntN(200_000), PrefillTokens: rng.IntN(50_000)})
	}
	return m
}

// encodePeer encodes m as the publisher does (a JSON encoder's output).
func encodePeer(m *peers.Message) ([]byte, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(m); err != nil {
		return nil, fmt.Errorf("encode peer load: %w", err)
	}
	return b.Bytes(), nil
}

// peerCosts measures one message's encode and decode CPU time (µs) over
// replicas, median of runs runs of about budget each.
func peerCosts(replicas, runs int, budget time.Duration, seed uint64) (size int, enc, dec float64, err error) {
	m := peerMessage(replicas, seed)
	body, err := encodePeer(&m)
	if err != nil {
		return 0, 0, 0, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var encs, decs []float64
	for range runs {
		for _, step := range []struct {
			out *[]float64
			fn  func() error
		}{
			{&encs, func() error { _, err := encodePeer(&m); return err }},
			{&decs, func() error { _, err := peers.Decode(bytes.NewReader(body)); return err }},
		} {
			n := 0
			c0, err := threadCPU()
			if err != nil {
				return 0, 0, 0, err
			}
			for end := time.Now().Add(budget / 2); n < 3 || time.Now().Before(end); n++ {
				if err := step.fn(); err != nil {
					return 0, 0, 0, err
				}
			}
			c1, err := threadCPU()
			if err != nil {
				return 0, 0, 0, err
			}
			*step.out = append(*step.out, float64(c1-c0)/1e3/float64(n))
		}
	}
	return len(body), median(encs), median(decs), nil
}

// peerPoints is the routers axis for each of replicaCounts.
func peerPoints(cfg Config) ([]PeerPoint, error) {
	var out []PeerPoint
	perSec := float64(time.Second / peerTick)
	for _, reps := range cfg.PeerReplicas {
		size, enc, dec, err := peerCosts(reps, cfg.Runs, cfg.RunTime, cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("peer message of %d replicas: %w", reps, err)
		}
		for _, n := range cfg.Routers {
			sent := perSec * float64(size) * float64(n-1)
			cpu := perSec * (enc + float64(n-1)*dec) // µs per second
			out = append(out, PeerPoint{Routers: n, Replicas: reps, MsgBytes: size, SentPerRouter: sent,
				Fleet: sent * float64(n), EncodeUS: enc, DecodeUS: dec, CorePct: cpu / 1e6 * 100})
		}
	}
	return out, nil
}
