package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// fakeRanks is a balancer over ranks whose coordinator snapshot is stats,
// on a clock the test moves.
type fakeRanks struct {
	b     *balancer
	stats []rankStats
	clock time.Time
}

func newFakeRanks(stats ...rankStats) *fakeRanks {
	f := &fakeRanks{stats: stats, clock: time.Unix(1000, 0)}
	f.b = newBalancer(len(stats), func(i int) rankStats { return f.stats[i] })
	f.b.now = func() time.Time { return f.clock }
	return f
}

// picks makes n unpinned choices; leaveNow ends each request before the
// next is chosen.
func (f *fakeRanks) picks(t *testing.T, n int, leaveNow bool) []int {
	t.Helper()
	var got []int
	for range n {
		i, leave, err := f.b.pick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if leaveNow {
			leave()
		}
		got = append(got, i)
	}
	return got
}

// TestBalancerFollowsDPLBClient pins the unpinned choice to vLLM's
// DPLBAsyncMPClient.get_core_engine_for_request (core_client.py; see
// docs/VLLM_PARITY.md): score max(in-flight, waiting+running), plus
// waiting*6*(kv_usage-0.5) over half full, lowest wins scanning from a
// start index that rotates on every choice, and the chosen rank's
// waiting count bumped until the next snapshot.
func TestBalancerFollowsDPLBClient(t *testing.T) {
	idle := rankStats{}
	for _, tc := range []struct {
		name     string
		stats    []rankStats
		n        int
		leaveNow bool
		want     []int
	}{
		// Equal engines: the rotating start and the local bumps spread
		// a burst, and finished requests alike, round-robin.
		{"idle ranks take turns", []rankStats{idle, idle, idle, idle}, 6, true, []int{0, 1, 2, 3, 0, 1}},
		{"a burst spreads", []rankStats{idle, idle, idle, idle}, 5, false, []int{0, 1, 2, 3, 0}},
		// waiting+running decides; a local bump counts as one waiting.
		{"least waiting+running", []rankStats{{running: 3}, {running: 1}, {waiting: 1, running: 1}, {running: 2}}, 3, true, []int{1, 1, 2}},
		// Rank 0's one waiting request on a full cache scores
		// 1 + 1*6*(1.0-0.5) = 4, over rank 1's 3 running.
		{"kv pressure penalises waiting", []rankStats{{waiting: 1, kvUsage: 1}, {running: 3}}, 1, true, []int{1}},
		// At half full the penalty is off: 1 < 3.
		{"no penalty at half full", []rankStats{{waiting: 1, kvUsage: 0.5}, {running: 3}}, 1, true, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeRanks(tc.stats...)
			if got := f.picks(t, tc.n, tc.leaveNow); !slices.Equal(got, tc.want) {
				t.Errorf("ranks chosen %v; want %v", got, tc.want)
			}
		})
	}
}

// TestBalancerInflightAndSnapshots: the in-flight count is a floor the
// snapshot cannot erase, a new snapshot replaces the local bumps, and a
// pinned request counts in flight without moving the rotation.
func TestBalancerInflightAndSnapshots(t *testing.T) {
	f := newFakeRanks(rankStats{}, rankStats{})
	if got := f.picks(t, 2, false); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("first choices %v; want [0 1]", got)
	}
	// A new snapshot shows both idle (the engines have not seen the
	// requests yet); in-flight 1 each still scores them equal, and the
	// rotation is back at rank 0.
	f.clock = f.clock.Add(statsInterval)
	if got := f.picks(t, 1, false); !slices.Equal(got, []int{0}) {
		t.Fatalf("after the snapshot %v; want [0]", got)
	}
	// Rank 0 has two in flight, rank 1 one. Two requests pinned to rank
	// 1 make it three there; on the next snapshot (idle again) the scan
	// starts at rank 1, which the pinned requests did not move, and the
	// in-flight floor sends the request to rank 0.
	ctx := context.WithValue(context.Background(), dpRankKey{}, 1)
	for range 2 {
		if i, _, err := f.b.pick(ctx); err != nil || i != 1 {
			t.Fatalf("pinned pick: rank %d, %v; want 1", i, err)
		}
	}
	f.clock = f.clock.Add(statsInterval)
	if got := f.picks(t, 1, false); !slices.Equal(got, []int{0}) {
		t.Errorf("with 2 in flight on rank 0 and 3 on rank 1: %v; want [0]", got)
	}
	if f.b.start != 0 {
		t.Errorf("start index %d after three unpinned choices; want 0 (pinned ones do not rotate)", f.b.start)
	}
}

// TestPinnedRankOutOfRange: vLLM's InputProcessor.process_inputs refuses
// a rank outside [0, size) with a 400 naming the range.
func TestPinnedRankOutOfRange(t *testing.T) {
	f := newFakeRanks(rankStats{}, rankStats{})
	for _, n := range []int{-1, 2} {
		_, _, err := f.b.pick(context.WithValue(context.Background(), dpRankKey{}, n))
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusBadRequest {
			t.Errorf("rank %d: %v; want a 400", n, err)
			continue
		}
		want := "data_parallel_rank " + map[int]string{-1: "-1", 2: "2"}[n] + " is out of range [0, 2)."
		if ae.msg != want {
			t.Errorf("rank %d: message %q; want %q", n, ae.msg, want)
		}
	}
}

// TestDPRankHeader reads the header as vLLM's _get_data_parallel_rank:
// any case, an integer pins, anything else pins nothing.
func TestDPRankHeader(t *testing.T) {
	for _, tc := range []struct {
		header, value string
		want          int
		pinned        bool
	}{
		{"X-data-parallel-rank", "2", 2, true},
		{"x-data-parallel-rank", " 3 ", 3, true},
		{"X-Data-Parallel-Rank", "-1", -1, true},
		{"X-data-parallel-rank", "two", 0, false},
		{"X-data-parallel-rank", "", 0, false},
		{"X-Other", "1", 0, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
		r.Header.Set(tc.header, tc.value)
		got, ok := dpRankOf(withDPRank(r.Context(), r))
		if got != tc.want || ok != tc.pinned {
			t.Errorf("%s: %q: rank %d pinned %t; want %d %t", tc.header, tc.value, got, ok, tc.want, tc.pinned)
		}
	}
}
