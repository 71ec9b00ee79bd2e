package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/localproc/netport"
)

// evt is a decoded KV event, read generically (not with the simulator's
// encoder types) so these tests check the wire, not a round trip.
type evt struct {
	Type   string
	Len    int      // array length, or map size
	Keys   []string // map keys in wire order (map form)
	Hashes []uint64
	Parent *uint64
	Tokens []uint32
	Medium string
}

type batch struct {
	Raw    []byte // the payload frame
	Topic  string
	Seq    uint64
	Len    int // outer array length
	Events []evt
}

// sub is a SUB socket bound on loopback, as the driver binds it, plus a
// replay port for the simulator's ROUTER.
type sub struct {
	s      *zmq.Socket
	port   int
	replay string
}

func newSub(t *testing.T) *sub {
	t.Helper()
	s, err := zmq.NewSocket(zmq.SUB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.SetLinger(0); s.Close() })
	_ = s.SetSubscribe("")
	port := netport.FreeTCP(t)
	if err := s.Bind(fmt.Sprintf("tcp://127.0.0.1:%d", port)); err != nil {
		t.Fatal(err)
	}
	return &sub{s: s, port: port, replay: fmt.Sprintf("tcp://127.0.0.1:%d", netport.FreeTCP(t))}
}

// flag returns the --kv-events-config value that points the simulator at
// this subscriber, with a replay endpoint.
func (s *sub) flag(topic string) string {
	cfg := map[string]any{
		"enable_kv_cache_events": true, "publisher": "zmq", "topic": topic,
		"endpoint":        fmt.Sprintf("tcp://127.0.0.1:%d", s.port),
		"replay_endpoint": fmt.Sprintf("tcp://*:%d", mustPort(s.replay)),
	}
	b, _ := json.Marshal(cfg)
	return string(b)
}

func mustPort(endpoint string) int {
	var port int
	fmt.Sscanf(endpoint[len("tcp://127.0.0.1:"):], "%d", &port)
	return port
}

// recv returns the next live batch, or false after timeout.
func (s *sub) recv(t *testing.T, timeout time.Duration) (batch, bool) {
	t.Helper()
	_ = s.s.SetRcvtimeo(timeout)
	frames, err := s.s.RecvMessageBytes(0)
	if err != nil {
		return batch{}, false
	}
	if len(frames) != 3 || len(frames[1]) != 8 {
		t.Fatalf("live message has %d frames (seq frame %d bytes); want 3 frames and an 8-byte seq", len(frames), len(frames[1]))
	}
	return decodeBatch(t, frames[0], frames[1], frames[2]), true
}

// collect gathers batches until done is satisfied, filling any gap in the
// sequence (including the slow-joiner gap before the first live batch) from
// the replay socket, so the result is every batch from seq 0 in order.
func (s *sub) collect(t *testing.T, done func([]batch) bool) []batch {
	t.Helper()
	var got []batch
	deadline := time.Now().Add(30 * time.Second)
	for !done(got) {
		if time.Now().After(deadline) {
			t.Fatalf("events incomplete after 30s: %d batches", len(got))
		}
		b, ok := s.recv(t, 100*time.Millisecond)
		if !ok {
			// Quiet: a batch may have been lost before the subscription
			// reached the publisher. Ask the replay socket for the rest.
			got = append(got, replay(t, s.replay, uint64(len(got)), 0)...)
			continue
		}
		if b.Seq < uint64(len(got)) {
			continue // already replayed
		}
		if next := uint64(len(got)); b.Seq > next {
			got = append(got, replay(t, s.replay, next, b.Seq)...)
		}
		if b.Seq != uint64(len(got)) {
			t.Fatalf("live seq %d after %d batches; want consecutive seqs", b.Seq, len(got))
		}
		got = append(got, b)
	}
	return got
}

// replay asks the ROUTER for batches [from, to) with a DEALER (to 0: all
// from on), accepting both reply shapes, and checks that none is missing.
func replay(t *testing.T, endpoint string, from, to uint64) []batch {
	t.Helper()
	var out []batch
	for _, f := range replayFrames(t, endpoint, from) {
		var b batch
		switch len(f) {
		case 3: // vLLM >= 0.26: topic, seq, payload
			b = decodeBatch(t, f[0], f[1], f[2])
		case 2: // older: seq, payload
			b = decodeBatch(t, nil, f[0], f[1])
		default:
			t.Fatalf("replay reply has %d frames; want 2 or 3", len(f))
		}
		if to != 0 && b.Seq >= to {
			break
		}
		if b.Seq != from+uint64(len(out)) {
			t.Fatalf("replay from %d gave seq %d at position %d", from, b.Seq, len(out))
		}
		out = append(out, b)
	}
	if to != 0 && uint64(len(out)) != to-from {
		t.Fatalf("replay from %d returned %d batches below %d", from, len(out), to)
	}
	return out
}

var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// replayFrames sends one replay request and returns each reply's frames after
// the empty delimiter, without the end marker, which it checks.
func replayFrames(t *testing.T, endpoint string, from uint64) [][][]byte {
	t.Helper()
	d, err := zmq.NewSocket(zmq.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { d.SetLinger(0); d.Close() }()
	_ = d.SetRcvtimeo(10 * time.Second)
	if err := d.Connect(endpoint); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SendMessage([]byte{}, binary.BigEndian.AppendUint64(nil, from)); err != nil {
		t.Fatal(err)
	}
	var out [][][]byte
	for {
		f, err := d.RecvMessageBytes(0)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if len(f) < 3 || len(f[0]) != 0 {
			t.Fatalf("replay reply %q: want an empty delimiter and at least 2 frames", f)
		}
		f = f[1:]
		if seq := f[len(f)-2]; string(seq) == string(endSeq) {
			if len(f[len(f)-1]) != 0 {
				t.Fatalf("end marker has a payload")
			}
			return out
		}
		out = append(out, f)
	}
}

func decodeBatch(t *testing.T, topic, seq, payload []byte) batch {
	t.Helper()
	var raw []any
	if err := msgpack.Unmarshal(payload, &raw); err != nil {
		t.Fatalf("payload is not a msgpack array: %v", err)
	}
	b := batch{Raw: payload, Topic: string(topic), Seq: binary.BigEndian.Uint64(seq), Len: len(raw)}
	if _, ok := raw[0].(float64); !ok {
		t.Fatalf("ts is %T; want float64", raw[0])
	}
	for _, e := range raw[1].([]any) {
		b.Events = append(b.Events, decodeEvent(t, e))
	}
	return b
}

func decodeEvent(t *testing.T, e any) evt {
	t.Helper()
	fields := map[string]any{}
	var ev evt
	switch v := e.(type) {
	case []any:
		ev.Len, ev.Type = len(v), v[0].(string)
		names := map[string][]string{
			"BlockStored":  {"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"},
			"BlockRemoved": {"type", "block_hashes", "medium", "group_idx"},
		}[ev.Type]
		for i, x := range v {
			if i < len(names) {
				fields[names[i]] = x
			}
		}
	case map[string]any:
		ev.Len, ev.Type = len(v), v["type"].(string)
		for k := range v {
			ev.Keys = append(ev.Keys, k)
		}
		sort.Strings(ev.Keys)
		fields = v
	default:
		t.Fatalf("event is %T; want an array or a map", e)
	}
	for _, h := range asSlice(fields["block_hashes"]) {
		ev.Hashes = append(ev.Hashes, toU64(t, h))
	}
	if p := fields["parent_block_hash"]; p != nil {
		v := toU64(t, p)
		ev.Parent = &v
	}
	for _, tok := range asSlice(fields["token_ids"]) {
		ev.Tokens = append(ev.Tokens, uint32(toU64(t, tok)))
	}
	ev.Medium, _ = fields["medium"].(string)
	return ev
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// toU64 normalises every msgpack integer width the decoder may return.
func toU64(t *testing.T, v any) uint64 {
	switch n := v.(type) {
	case uint8:
		return uint64(n)
	case uint16:
		return uint64(n)
	case uint32:
		return uint64(n)
	case uint64:
		return n
	case int8:
		return uint64(n)
	case int16:
		return uint64(n)
	case int32:
		return uint64(n)
	case int64:
		return uint64(n)
	}
	t.Fatalf("%v (%T) is not an integer", v, v)
	return 0
}

// dump reads the simulator's ground truth: every block its caches hold.
func dump(t *testing.T, p proc) []simproc.Block {
	t.Helper()
	d, err := simproc.ReadDump(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return d.Blocks
}

// state replays events into hash -> number of copies per medium, with the
// tokens each GPU hash was stored with.
type state struct {
	copies map[string]map[uint64]int
	tokens map[uint64][]uint32
}

func apply(batches []batch) state {
	s := state{copies: map[string]map[uint64]int{"GPU": {}, "CPU": {}}, tokens: map[uint64][]uint32{}}
	for _, b := range batches {
		for _, e := range b.Events {
			switch e.Type {
			case "BlockStored":
				bs := 0
				if len(e.Hashes) > 0 {
					bs = len(e.Tokens) / len(e.Hashes)
				}
				for i, h := range e.Hashes {
					s.copies[e.Medium][h]++
					if bs > 0 {
						s.tokens[h] = e.Tokens[i*bs : (i+1)*bs]
					}
				}
			case "BlockRemoved":
				for _, h := range e.Hashes {
					if s.copies[e.Medium][h]--; s.copies[e.Medium][h] == 0 {
						delete(s.copies[e.Medium], h)
					}
				}
			case "AllBlocksCleared":
				s.copies = map[string]map[uint64]int{"GPU": {}, "CPU": {}}
			}
		}
	}
	return s
}

// truth counts the dump's blocks the same way.
func truth(blocks []simproc.Block) map[string]map[uint64]int {
	m := map[string]map[uint64]int{"GPU": {}, "CPU": {}}
	for _, b := range blocks {
		m[b.Medium][b.Hash]++
	}
	return m
}
