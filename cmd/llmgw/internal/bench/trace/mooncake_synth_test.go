package trace

import (
	"bytes"
	"flag"
	"math"
	"math/rand/v2"
	"testing"
)

var updateMooncake = flag.Bool("update-mooncake", false, "rewrite testdata/mooncake-synth.jsonl from synthMooncake")

// mooncakeFile is a larger synthetic trace with the published Mooncake
// trace's statistics, made by synthMooncake; regenerate it with
//
//	go test ./cmd/llmgw/internal/bench/trace -run MooncakeSynth -update-mooncake
//
// It is synthetic: no line comes from a published trace.
const mooncakeFile = "testdata/mooncake-synth.jsonl"

// The published figures synthMooncake aims at (docs/PEER_POLICIES.md
// cites them): the Mooncake trace (kvcache-ai/Mooncake, mooncake_trace.jsonl
// and FAST25-release/traces) holds 23,608 requests over one hour, with an
// average input of 7,590 tokens and output of 182 tokens (technical report,
// arXiv:2407.00079, section 4), and up to 50% of its blocks hit a cache
// (FAST25-release/README.md). Arrivals share millisecond timestamps in
// bursts (the trace's first lines).
const (
	mooncakeRequestsPerHour = 23608
	mooncakeMeanInput       = 7590
	mooncakeMeanOutput      = 182
	mooncakeReuse           = 0.5
)

// synthMooncake writes n requests in the Mooncake format. Input and
// output lengths are log-normal with the published means (the spread,
// sigma 1 and 0.8, is this generator's choice; the trace's own
// distributions are not published as figures). Most requests open with
// a prefix of one of 64 shared block chains (documents, system prompts,
// conversations), chosen with Zipf popularity and covering 40-100% of the
// prompt, so that about half of all blocks repeat an earlier request's.
// Arrivals come in bursts of 1-4 requests with one timestamp, the bursts
// Poisson at the trace's mean rate.
func synthMooncake(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x3005))
	next := int64(0)
	chains := make([][]int64, 64)
	zipf := rand.NewZipf(rng, 1.2, 1, uint64(len(chains)-1))
	logNormal := func(mean, sigma float64) float64 {
		return math.Exp(math.Log(mean) - sigma*sigma/2 + sigma*rng.NormFloat64())
	}
	var buf bytes.Buffer
	at := 0.0 // ms
	perMS := float64(mooncakeRequestsPerHour) / 3600e3
	for k := 0; k < n; {
		burst := 1 + rng.IntN(4) // mean 2.5 requests a burst
		at += rng.ExpFloat64() * float64(burst) / perMS
		for ; burst > 0 && k < n; burst, k = burst-1, k+1 {
			input := int(min(max(logNormal(mooncakeMeanInput, 1), 16), 128<<10-4096))
			blocks := (input + DefaultBlockSize - 1) / DefaultBlockSize
			ids := make([]int64, 0, blocks)
			if rng.Float64() < 0.8 {
				c := zipf.Uint64()
				shared := int(math.Round(float64(blocks) * (0.4 + 0.6*rng.Float64())))
				for len(chains[c]) < shared {
					chains[c] = append(chains[c], next)
					next++
				}
				ids = append(ids, chains[c][:shared]...)
			}
			for len(ids) < blocks {
				ids = append(ids, next)
				next++
			}
			output := int(min(max(logNormal(mooncakeMeanOutput, 0.8), 1), 4096))
			writeRecord(&buf, int64(at), input, output, ids)
		}
	}
	return buf.Bytes()
}

// TestMooncakeSynthUpToDate: the committed trace is what synthMooncake
// makes, and it has the published statistics it claims.
func TestMooncakeSynthUpToDate(t *testing.T) {
	got := upToDate(t, mooncakeFile, synthMooncake(2400, 1), *updateMooncake, "synthMooncake", "-update-mooncake")
	tr, err := Parse(bytes.NewReader(got), DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	var input, output, blocks, reused float64
	seen := map[int64]bool{}
	var gaps []float64
	for i, e := range tr.Entries {
		input += float64(e.InputLength)
		output += float64(e.OutputLength)
		for _, id := range e.HashIDs {
			blocks++
			if seen[id] {
				reused++
			}
			seen[id] = true
		}
		if i > 0 {
			gaps = append(gaps, float64(e.Timestamp-tr.Entries[i-1].Timestamp))
		}
	}
	n := float64(len(tr.Entries))
	within := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol*want {
			t.Errorf("%s = %.3g; want %.3g within %.0f%%", what, got, want, 100*tol)
		}
	}
	within("mean input tokens", input/n, mooncakeMeanInput, 0.1)
	within("mean output tokens", output/n, mooncakeMeanOutput, 0.15)
	within("share of reused blocks", reused/blocks, mooncakeReuse, 0.1)
	span := float64(tr.Entries[len(tr.Entries)-1].Timestamp) / 3600e3
	within("requests per hour", n/span, mooncakeRequestsPerHour, 0.15)
	// Bursty: the gaps' coefficient of variation is well above a Poisson
	// process's 1, and many requests share a timestamp.
	mean, sq, zero := 0.0, 0.0, 0
	for _, g := range gaps {
		mean += g
		if g == 0 {
			zero++
		}
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	cv := math.Sqrt(sq/float64(len(gaps))) / mean
	t.Logf("%d requests: mean input %.0f, output %.0f tokens, %.1f%% blocks reused, %.0f requests/hour, gap CV %.2f, %.0f%% share a timestamp",
		len(tr.Entries), input/n, output/n, 100*reused/blocks, n/span, cv, 100*float64(zero)/float64(len(gaps)))
	if cv < 1.2 {
		t.Errorf("inter-arrival coefficient of variation %.2f; want > 1.2 (bursty)", cv)
	}
	if share := float64(zero) / float64(len(gaps)); share < 0.4 {
		t.Errorf("%.0f%% of requests share the previous timestamp; want >= 40%%", 100*share)
	}
	if len(got) > 2<<20 {
		t.Errorf("%s is %d bytes; keep it under 2 MiB", mooncakeFile, len(got))
	}
}
