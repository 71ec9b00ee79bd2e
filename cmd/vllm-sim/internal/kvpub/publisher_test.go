package kvpub

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
	"github.com/llmgw/llmgw/internal/localproc/netport"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func socket(t testing.TB, typ zmq.Type) *zmq.Socket {
	t.Helper()
	s, err := zmq.NewSocket(typ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.SetLinger(0); s.Close() })
	if err := s.SetRcvtimeo(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return s
}

// subscriber binds a SUB on a free loopback port, as the driver does, and
// returns it with the connect endpoint to give the publisher.
func subscriber(t testing.TB) (*zmq.Socket, string) {
	t.Helper()
	sub := socket(t, zmq.SUB)
	sub.SetSubscribe("")
	port := netport.FreeTCP(t)
	if err := sub.Bind(fmt.Sprintf("tcp://127.0.0.1:%d", port)); err != nil {
		t.Fatal(err)
	}
	return sub, fmt.Sprintf("tcp://127.0.0.1:%d", port)
}

func cleared() []kvcache.Event { return []kvcache.Event{{Kind: kvcache.AllBlocksCleared}} }

func newPublisher(t *testing.T, cfg Config) *Publisher {
	t.Helper()
	if cfg.Schema.StoredLen == 0 {
		cfg.Schema = Schema{StoredLen: 12, IntHashes: true}
	}
	cfg.HWM, cfg.MaxQueueSize = 1000, 100
	if cfg.BufferSteps == 0 {
		cfg.BufferSteps = 100
	}
	p, err := New(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func recv(t *testing.T, s *zmq.Socket) [][]byte {
	t.Helper()
	frames, err := s.RecvMessageBytes(0)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return frames
}

// warmUp publishes until the subscriber receives a batch: a PUB drops what it
// sends before the SUB's subscription has reached it (ZMQ's slow joiner),
// which is why consumers replay from 0 on first connect. It returns the seq
// of the batch received.
func warmUp(t *testing.T, p *Publisher, sub *zmq.Socket) uint64 {
	t.Helper()
	sub.SetRcvtimeo(20 * time.Millisecond)
	defer sub.SetRcvtimeo(10 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := p.Publish(t.Context(), 0, cleared()); err != nil {
			t.Fatal(err)
		}
		if f, err := sub.RecvMessageBytes(0); err == nil {
			return binary.BigEndian.Uint64(f[1])
		}
	}
	t.Fatal("subscriber never received a batch")
	return 0
}

func TestLiveFrames(t *testing.T) {
	sub, endpoint := subscriber(t)
	p := newPublisher(t, Config{Endpoint: endpoint, Topic: "kv@sim"})
	last := warmUp(t, p, sub)
	for i := range 3 {
		if err := p.Publish(t.Context(), float64(i), cleared()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		f := recv(t, sub)
		if len(f) != 3 {
			t.Fatalf("%d frames; want 3", len(f))
		}
		want := last + 1 + uint64(i)
		if string(f[0]) != "kv@sim" || len(f[1]) != 8 || binary.BigEndian.Uint64(f[1]) != want {
			t.Errorf("frames topic %q seq % x; want topic kv@sim and seq %d", f[0], f[1], want)
		}
		var buf bytes.Buffer
		_ = Encode(&buf, Schema{StoredLen: 12, IntHashes: true}, float64(i), cleared(), 0)
		if !bytes.Equal(f[2], buf.Bytes()) {
			t.Errorf("payload % x; want % x", f[2], buf.Bytes())
		}
	}
}

// replay asks for every batch from start and returns the seqs replayed,
// checking the frame shape of every reply.
func replay(t *testing.T, endpoint string, start uint64, shape ReplayShape, topic string) []uint64 {
	t.Helper()
	dealer := socket(t, zmq.DEALER)
	if err := dealer.Connect(endpoint); err != nil {
		t.Fatal(err)
	}
	if _, err := dealer.SendMessage([]byte{}, seqBytes(start)); err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for {
		f := recv(t, dealer)
		if len(f) == 0 || len(f[0]) != 0 {
			t.Fatalf("reply %q lacks the empty delimiter", f)
		}
		f = f[1:]
		wantLen := 3
		if shape == ReplayOld {
			wantLen = 2
		}
		if len(f) != wantLen {
			t.Fatalf("reply has %d frames; want %d", len(f), wantLen)
		}
		seq, payload := f[len(f)-2], f[len(f)-1]
		if bytes.Equal(seq, endSeq) {
			if len(payload) != 0 || (shape == ReplayNew && len(f[0]) != 0) {
				t.Errorf("end marker %q; want empty topic and payload", f)
			}
			return got
		}
		if shape == ReplayNew && string(f[0]) != topic {
			t.Errorf("replayed topic %q; want %q", f[0], topic)
		}
		got = append(got, binary.BigEndian.Uint64(seq))
	}
}

func TestReplayShapesSeqFromZeroAndDrop(t *testing.T) {
	for _, shape := range []ReplayShape{ReplayNew, ReplayOld} {
		t.Run(fmt.Sprint(shape), func(t *testing.T) {
			sub, endpoint := subscriber(t)
			replayAt := fmt.Sprintf("tcp://127.0.0.1:%d", netport.FreeTCP(t))
			p := newPublisher(t, Config{Endpoint: endpoint, ReplayEndpoint: replayAt, Topic: "t", ReplayShape: shape})
			last := warmUp(t, p, sub)
			p.Drop(2)
			for i := range 4 {
				if err := p.Publish(t.Context(), float64(i), cleared()); err != nil {
					t.Fatal(err)
				}
			}
			// Two batches were withheld: the next live one skips two seqs.
			if f := recv(t, sub); binary.BigEndian.Uint64(f[1]) != last+3 {
				t.Fatalf("first live seq after the drop %d; want %d", binary.BigEndian.Uint64(f[1]), last+3)
			}
			// Publish only queues: receiving the last batch shows all four
			// went through the publisher before replay is asked.
			if f := recv(t, sub); binary.BigEndian.Uint64(f[1]) != last+4 {
				t.Fatalf("second live seq after the drop %d; want %d", binary.BigEndian.Uint64(f[1]), last+4)
			}
			got := replay(t, replayAt, 0, shape, "t")
			if len(got) != int(last)+5 || got[0] != 0 {
				t.Fatalf("replay from 0 gave %v; want 0..%d", got, last+4)
			}
			for i, seq := range got {
				if seq != uint64(i) {
					t.Fatalf("replay from 0 gave %v; want consecutive seqs from 0", got)
				}
			}
			if got := replay(t, replayAt, last+1, shape, "t"); len(got) != 4 || got[0] != last+1 {
				t.Errorf("replay from %d gave %v; want the 4 batches since", last+1, got)
			}
		})
	}
}

func TestReplayBufferKeepsLastSteps(t *testing.T) {
	var r ring
	for i := range uint64(7) {
		r.push(sent{seq: i}, 3)
	}
	var got []uint64
	r.each(func(s sent) { got = append(got, s.seq) })
	if fmt.Sprint(got) != "[4 5 6]" {
		t.Errorf("ring holds %v; want [4 5 6]", got)
	}
}

func TestEndpointRules(t *testing.T) {
	tests := []struct {
		endpoint string
		rank     int
		want     string
		binds    bool
	}{
		{"tcp://*:5557", 0, "tcp://*:5557", true},
		{"tcp://*:5557", 2, "tcp://*:5559", true},
		{"tcp://0.0.0.0:5557", 1, "tcp://0.0.0.0:5558", false},
		{"tcp://127.0.0.1:6000", 3, "tcp://127.0.0.1:6003", false},
		{"tcp://[::1]:6000", 0, "tcp://[::1]:6000", true},
		{"inproc://kv", 1, "inproc://kv_dp1", true},
		{"ipc:///tmp/kv", 0, "ipc:///tmp/kv", true},
		// vLLM's tests are substring tests: "inproc" anywhere suffixes.
		{"ipc:///task/llmgw-kv/inproc-events", 1, "ipc:///task/llmgw-kv/inproc-events_dp1", true},
		{"ipc:///task/llmgw-kv/inproc-replay", 3, "ipc:///task/llmgw-kv/inproc-replay_dp3", true},
	}
	for _, tt := range tests {
		got, err := OffsetEndpointPort(tt.endpoint, tt.rank)
		if err != nil || got != tt.want {
			t.Errorf("OffsetEndpointPort(%q, %d) = %q, %v; want %q", tt.endpoint, tt.rank, got, err, tt.want)
		}
		if binds(tt.endpoint) != tt.binds {
			t.Errorf("binds(%q) = %v; want %v", tt.endpoint, !tt.binds, tt.binds)
		}
	}
	// No "inproc" and no "tcp": ValueError in vLLM; "tcp" in an ipc path
	// sends it to the port branch, where the path is no port.
	for _, bad := range []string{"ipc:///tmp/kv", "tcp://host:port", "ipc:///tmp/tcp-kv"} {
		if _, err := OffsetEndpointPort(bad, 1); err == nil {
			t.Errorf("OffsetEndpointPort(%q, 1) succeeded; want an error", bad)
		}
	}
}

func TestNewFailsOnBusyBind(t *testing.T) {
	port := netport.FreeTCP(t)
	a := newPublisher(t, Config{Endpoint: fmt.Sprintf("tcp://*:%d", port)})
	_ = a
	_, err := New(Config{Endpoint: fmt.Sprintf("tcp://*:%d", port), Schema: Schema{StoredLen: 12}, HWM: 1, MaxQueueSize: 1}, quiet())
	if err == nil {
		t.Fatal("second bind on the same port succeeded")
	}
}
