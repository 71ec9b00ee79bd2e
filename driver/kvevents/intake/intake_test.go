package intake

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func TestIntakeDataParallelRanks(t *testing.T) {
	s := kvevents.NewStore()
	in, err := Open(Config{Replica: "r", DataParallelSize: 3}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var cfg map[string]any
	if err := json.Unmarshal([]byte(in.EngineFlag()), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["enable_kv_cache_events"] != true || cfg["publisher"] != "zmq" || cfg["endpoint"] != "tcp://127.0.0.1:"+itoa(in.Port()) ||
		cfg["replay_endpoint"] != "tcp://127.0.0.1:"+itoa(in.ReplayPort()) {
		t.Errorf("engine config %v", cfg)
	}
	tk := kvtest.Toks(0, 4)
	key := blockkey.Keys(nil, blockkey.Root(""), tk, 4)[0]
	var want []kvevents.Block
	for rank := range 3 {
		// vLLM offsets the port by the rank.
		e := startFakeEngine(t, "tcp://127.0.0.1:"+itoa(in.Port()+rank), 0, true)
		e.publish(storedPayload(t, []uint64{uint64(rank)}, nil, tk, 4), false)
		want = append(want, kvtest.GPU(rank, key)...)
	}
	poll.Until(t, "every rank", func() bool { return len(s.Blocks("r")) == 3 })
	if got := s.Blocks("r"); !slices.Equal(got, want) {
		t.Errorf("blocks %v; want %v", got, want)
	}
	for rank, st := range in.Stats() {
		if st.LastSeq != 0 {
			t.Errorf("rank %d last seq %d; want 0", rank, st.LastSeq)
		}
	}
}

func TestIntakeReusesPort(t *testing.T) {
	in, err := Open(Config{Replica: "r", ReplayPort: -1}, kvevents.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	port := in.Port()
	if in.EngineConfig().ReplayEndpoint != "" {
		t.Errorf("replay endpoint %q; want none", in.EngineConfig().ReplayEndpoint)
	}
	in.Close()
	in2, err := Open(Config{Replica: "r", Port: port, ReplayPort: -1}, kvevents.NewStore())
	if err != nil {
		t.Fatalf("rebinding port %d: %v", port, err)
	}
	defer in2.Close()
	if in2.Port() != port {
		t.Errorf("port %d; want %d", in2.Port(), port)
	}
}

func TestIntakeRejectsEmptyReplica(t *testing.T) {
	if _, err := Open(Config{}, kvevents.NewStore()); err == nil {
		t.Fatal("no error for an empty replica id")
	}
}

// TestIntakeAnnouncesNewEngine: a replica whose engine has published
// nothing yet is part of every snapshot and is sent to a running session
// as a reset, so routers know it holds nothing instead of not knowing it.
func TestIntakeAnnouncesNewEngine(t *testing.T) {
	s := kvevents.NewStore()
	running := s.Open()
	defer running.Close()
	if d := running.Drain(); !d.Snapshot || len(d.Replicas) != 0 {
		t.Fatalf("first drain %+v; want an empty snapshot", d)
	}
	in, err := Open(Config{Replica: "r"}, s)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	in.EngineRestarted()
	want := []kvwire.Replica{{ID: "r", Reset: true}}
	if d := running.Drain(); d.Snapshot || !slices.EqualFunc(d.Replicas, want, sameReplica) {
		t.Errorf("delta %+v; want replica r reset, holding nothing", d)
	}
	later := s.Open()
	defer later.Close()
	want = []kvwire.Replica{{ID: "r"}}
	if d := later.Drain(); !d.Snapshot || !slices.EqualFunc(d.Replicas, want, sameReplica) {
		t.Errorf("snapshot %+v; want replica r, holding nothing", d)
	}
	if got := s.Replicas(); !slices.Equal(got, []string{"r"}) {
		t.Errorf("store replicas %v; want [r]", got)
	}
}

func sameReplica(a, b kvwire.Replica) bool {
	return a.ID == b.ID && a.Reset == b.Reset && a.BlockSize == b.BlockSize && len(a.Groups) == 0 && len(b.Groups) == 0
}
