package peers

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/load"
)

// fleetLoad is one router's own load over a fleet of n replicas, with
// Nomad-length ids, every replica in flight.
func fleetLoad(n int) map[string]load.Peer {
	own := make(map[string]load.Peer, n)
	for i := range n {
		own[fmt.Sprintf("%08x-1c2d-4e5f-a1b2-%012x/vllm", i, i*7919)] = load.Peer{InFlight: 1 + i%7, InFlightTokens: 1000 + 37*i, PrefillTokens: 13 * i}
	}
	return own
}

// BenchmarkPeerMessage is one peer message sent and taken over real
// HTTP on loopback, both ends in this process: the client's post, the
// server's read, decode and table update. The message's encoding is left
// out (a router encodes it once per change for all its peers: see
// BenchmarkPeerBuild); the table coalesces its sums as router/server
// runs it, and BenchmarkPeerFlush is what each sum costs.
func BenchmarkPeerMessage(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		for _, compact := range []bool{false, true} {
			b.Run(fmt.Sprintf("replicas=%d/wire=%s", n, wireName(compact)), func(b *testing.B) {
				tab, err := NewTable("b", "secret", load.NewTracker(), time.Minute)
				if err != nil {
					b.Fatal(err)
				}
				tab.SetPublishEvery(time.Hour)
				srv := httptest.NewServer(tab)
				defer srv.Close()
				p := &Publisher{opts: PublisherOptions{Self: "a", Token: "secret", Client: srv.Client()},
					dir: newDirectory(), wire: map[string]bool{"b": compact}, holds: map[string]held{}}
				p.next(fleetLoad(n), nil)
				// Each message a new seq, made without re-encoding it: the
				// compact header is rebuilt, JSON's seq is patched in.
				jsonBody, err := p.jsonLocked()
				if err != nil {
					b.Fatal(err)
				}
				body := func(seq uint64) sending {
					if !compact {
						return sending{seq: seq, body: bytes.Replace(jsonBody, []byte(`"seq":1,`), fmt.Appendf(nil, `"seq":%d,`, seq), 1)}
					}
					from := 0
					if p.holds["b"].gen == p.compact.gen {
						from = len(p.dir.names)
					}
					p.compact.seq = seq
					return sending{seq: seq, compact: true, gen: p.compact.gen, names: len(p.dir.names), body: p.compact.encode(p.dir.names, from)}
				}
				post := func(s sending) {
					if code, _, err := p.do(context.Background(), srv.URL+Path, s); err != nil || code != http.StatusNoContent {
						b.Fatalf("post: %d %v", code, err)
					}
					if s.compact {
						p.holds["b"] = held{gen: s.gen, names: s.names}
					}
				}
				post(body(1)) // the directory, once
				b.ResetTimer()
				for i := range b.N {
					post(body(uint64(i) + 2))
				}
				b.StopTimer()
				if st := tab.Stats(); st.Accepted != uint64(b.N)+1 {
					b.Fatalf("table accepted %d of %d", st.Accepted, b.N+1)
				}
				b.ReportMetric(float64(len(p.compact.tail)), "tail-bytes")
			})
		}
	}
}

// BenchmarkPeerBuild is a publisher making its message from its own load
// (next), which it does at most once an interval while the load changes,
// and encoding it for one target of each wire.
func BenchmarkPeerBuild(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		for _, compact := range []bool{false, true} {
			b.Run(fmt.Sprintf("replicas=%d/wire=%s", n, wireName(compact)), func(b *testing.B) {
				p := &Publisher{opts: PublisherOptions{Self: "a"}, dir: newDirectory(), wire: map[string]bool{"b": compact}, holds: map[string]held{}}
				own := fleetLoad(n)
				var size int
				for range b.N {
					p.next(own, nil)
					body, names, _, err := p.bodyLocked("b")
					if err != nil {
						b.Fatal(err)
					}
					p.holds["b"] = held{gen: p.compact.gen, names: names}
					size = len(body)
				}
				b.ReportMetric(float64(size), "body-bytes")
			})
		}
	}
}

// BenchmarkPeerFlush is one sum handed to the load tracker: a table with
// 31 peers over n replicas, and a tracker that knows them all.
func BenchmarkPeerFlush(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			tr := load.NewTracker()
			tab, err := NewTable("self", "secret", tr, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			own := fleetLoad(n)
			for id := range own {
				_, end := tr.BeginPrefill(id, 10, 1)
				defer end()
			}
			for i := range 31 {
				m := Message{Version: MinVersion, Router: fmt.Sprintf("r%d", i), Seq: 1}
				for id, l := range own {
					m.Replicas = append(m.Replicas, Replica{ID: id, InFlight: l.InFlight})
				}
				tab.Put(m)
			}
			b.ResetTimer()
			for range b.N {
				tab.mu.Lock()
				tab.publishLocked()
				tab.mu.Unlock()
			}
		})
	}
}

func wireName(compact bool) string {
	if compact {
		return "compact"
	}
	return "json"
}

// BenchmarkPeerTick is a publisher's tick while nothing goes out: it reads
// the router's own load (load.Tracker.Own) and compares it with what it
// sent last, 20 times a second at the default interval.
func BenchmarkPeerTick(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			tr := load.NewTracker(load.WithPrefillRate(0)) // queued prefill held still
			for id := range fleetLoad(n) {
				_, end := tr.BeginPrefill(id, 1000, 10)
				defer end()
			}
			last := tr.Own()
			b.ResetTimer()
			for range b.N {
				own := tr.Own()
				if !maps.Equal(own, last) {
					b.Fatal("the load changed")
				}
			}
		})
	}
}
