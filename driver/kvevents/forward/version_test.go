package forward

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// The previous protocol version's messages, field for field: a router of
// that version decodes into these, and msgpack refuses an array with more
// fields than its struct.
type (
	v1Update struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Version  int
		Driver   string
		Epoch    uint64
		Seq      uint64
		Snapshot bool
		Replicas []v1Replica
	}
	v1Replica struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		ID        string
		BlockSize int
		Reset     bool
		Groups    []v1Group
	}
	v1Group struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Rank int
		Tier kvwire.Tier
		Add  []uint64
		Del  []uint64
	}
)

// oldRouter answers as a router of protocol version 1 does: it decodes
// into version 1's shapes and refuses any other version with 400, and
// holds what the updates say.
type oldRouter struct {
	mu      sync.Mutex
	held    map[kvevents.Block]bool
	refused int
}

func (o *oldRouter) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var u v1Update
	dec := msgpack.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(&u)
	if err == nil && u.Version != 1 {
		err = fmt.Errorf("version %d; this receiver speaks %d", u.Version, 1)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.refused++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "malformed KV update: " + err.Error()})
		return
	}
	if u.Snapshot || o.held == nil {
		o.held = map[kvevents.Block]bool{}
	}
	for _, r := range u.Replicas {
		for _, g := range r.Groups {
			for _, k := range g.Del {
				delete(o.held, kvevents.Block{Rank: g.Rank, Tier: g.Tier, Key: blockkey.Key(k)})
			}
			for _, k := range g.Add {
				o.held[kvevents.Block{Rank: g.Rank, Tier: g.Tier, Key: blockkey.Key(k)}] = true
			}
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (o *oldRouter) blocks() []kvevents.Block {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []kvevents.Block
	for b := range o.held {
		out = append(out, b)
	}
	return kvtest.SortBlocks(out)
}

// A driver of this version feeds a router of the previous version and
// one of this version at once: the old router gets the full-attention
// group's blocks (all it can index), the new one every group's, and a
// removal in the sliding-window group changes neither's full-attention
// residency.
func TestMixedVersions(t *testing.T) {
	const bs = 4
	all := kvtest.Toks(100, 3*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), all, bs)
	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0,
		inGroup(0, kvwire.KindFull, 0, kvtest.Stored([]uint64{1, 2, 3}, nil, all, bs)),
		inGroup(1, kvwire.KindSlidingWindow, 8, kvtest.Stored([]uint64{1, 2, 3}, nil, all, bs)),
	)
	old := &oldRouter{}
	oldSrv := httptest.NewServer(old)
	t.Cleanup(oldSrv.Close)
	cur := startRouter(t, "secret")
	forwarder(t, s, newStaticRouters(RouterEndpoint{ID: "old", URL: oldSrv.URL}, cur.endpoint("new")), "secret")

	poll.Until(t, "the old router to hold group 0", func() bool { return slices.Equal(old.blocks(), kvtest.SortBlocks(kvtest.GPU(0, keys...))) })
	kvtest.WaitMirror(t, cur.Router, "node-1", s, "a")
	if got := cur.blocks("a"); len(got) != 2*len(keys) {
		t.Fatalf("new router holds %v; want both groups", got)
	}

	kvtest.Apply(s, "a", 0, inGroup(1, kvwire.KindUnknown, 0, kvtest.Removed(kvevents.MediumGPU, 1, 2)))
	kvtest.Apply(s, "a", 0, inGroup(0, kvwire.KindUnknown, 0, kvtest.Removed(kvevents.MediumGPU, 3)))
	poll.Until(t, "the old router to drop group 0's last block", func() bool { return slices.Equal(old.blocks(), kvtest.SortBlocks(kvtest.GPU(0, keys[:2]...))) })
	poll.Until(t, "the new router to match the store", func() bool {
		return slices.Equal(cur.blocks("a"), s.Blocks("a"))
	})
	want := kvtest.SortBlocks(append(kvtest.GPU(0, keys[:2]...), group(1, kvtest.GPU(0, keys[2]))...))
	if got := s.Blocks("a"); !slices.Equal(got, want) {
		t.Errorf("store %v; want %v", got, want)
	}
	old.mu.Lock()
	refused := old.refused
	old.mu.Unlock()
	if refused == 0 {
		t.Error("the old router never saw version 2: the test does not show the fallback")
	}
}

// inGroup puts ev in KV-cache group g of the given kind and window.
func inGroup(g int, kind kvwire.Kind, window int, ev kvevents.Event) kvevents.Event {
	ev.GroupIdx, ev.Kind, ev.Window, ev.HasKind = g, kind, window, kind != kvwire.KindUnknown
	return ev
}

// group moves bs into KV-cache group g.
func group(g int, bs []kvevents.Block) []kvevents.Block {
	for i := range bs {
		bs[i].Group = g
	}
	return bs
}
