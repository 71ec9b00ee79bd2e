package kvwire

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func hybridUpdate() *Update {
	return &Update{Version: Version, Driver: "node-1", Epoch: 9, Seq: 3, Replicas: []Replica{{
		ID: "a/t", BlockSize: 16,
		Layout: []KVGroupSpec{{Index: 0, Kind: KindFull, BlockSize: 16}, {Index: 1, Kind: KindSlidingWindow, Window: 128, BlockSize: 16}},
		Groups: []Group{
			{Rank: 0, Tier: TierGPU, Add: []uint64{1, 2}, Del: []uint64{3}, KVGroup: 0},
			{Rank: 0, Tier: TierGPU, Add: []uint64{2}, Del: []uint64{1}, KVGroup: 1},
		},
	}}}
}

// Version 3 carries a replica's Approx; version 2 bytes are those a
// version 2 sender writes (no Approx), and decode as version 2.
func TestVersion3Approx(t *testing.T) {
	t.Parallel()
	u := hybridUpdate()
	u.Replicas[0].Approx = "engine's KV events carry no extra_keys"
	got, err := Decode(mustEncode(t, u))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("decoded %+v; want %+v", got, u)
	}

	u.Version = 2
	b := mustEncode(t, u)
	r := u.Replicas[0]
	v2, err := msgpack.Marshal(&updateV2{Version: 2, Driver: u.Driver, Epoch: u.Epoch, Seq: u.Seq,
		Replicas: []replicaV2{{ID: r.ID, BlockSize: r.BlockSize, Groups: r.Groups, Layout: r.Layout}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b, v2) {
		t.Errorf("version 2 bytes differ from a version 2 sender's")
	}
	got, err = Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := *u
	want.Replicas = []Replica{r}
	want.Replicas[0].Approx = ""
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("decoded %+v; want %+v", got, &want)
	}
}

// Version 4 carries a replica's OffloadBlockSize; version 3 bytes are
// those a version 3 sender writes (no OffloadBlockSize), and decode as
// version 3 with Approx kept.
func TestVersion4OffloadBlockSize(t *testing.T) {
	t.Parallel()
	u := hybridUpdate()
	u.Replicas[0].Approx = "engine's KV events carry no extra_keys"
	u.Replicas[0].OffloadBlockSize = 64
	got, err := Decode(mustEncode(t, u))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("decoded %+v; want %+v", got, u)
	}

	u.Version = 3
	b := mustEncode(t, u)
	r := u.Replicas[0]
	v3, err := msgpack.Marshal(&updateV3{Version: 3, Driver: u.Driver, Epoch: u.Epoch, Seq: u.Seq,
		Replicas: []replicaV3{{ID: r.ID, BlockSize: r.BlockSize, Groups: r.Groups, Layout: r.Layout, Approx: r.Approx}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b, v3) {
		t.Errorf("version 3 bytes differ from a version 3 sender's")
	}
	got, err = Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want := *u
	want.Replicas = []Replica{r}
	want.Replicas[0].OffloadBlockSize = 0
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("decoded %+v; want %+v", got, &want)
	}

	for _, size := range []int{-1, 1<<20 + 1} {
		u := hybridUpdate()
		u.Replicas[0].OffloadBlockSize = size
		if _, err := Decode(mustEncode(t, u)); !errors.Is(err, ErrMalformed) {
			t.Errorf("offloaded block size %d: %v; want ErrMalformed", size, err)
		}
	}
}

func TestVersion2RoundTrip(t *testing.T) {
	t.Parallel()
	u := hybridUpdate()
	got, err := Decode(mustEncode(t, u))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("decoded %+v; want %+v", got, u)
	}
}

// A version 1 encoding of a hybrid update keeps the primary group only,
// and a version 2 receiver reads a version 1 body as group 0.
func TestVersion1Shape(t *testing.T) {
	t.Parallel()
	u := hybridUpdate()
	u.Version = 1
	got, err := Decode(mustEncode(t, u))
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{{Rank: 0, Tier: TierGPU, Add: []uint64{1, 2}, Del: []uint64{3}}}
	if got.Version != 1 || len(got.Replicas) != 1 || !reflect.DeepEqual(got.Replicas[0].Groups, want) || got.Replicas[0].Layout != nil {
		t.Errorf("decoded %+v; want version 1 with groups %+v and no layout", got, want)
	}
	// The bytes are exactly what a version 1 sender wrote.
	v1 := &updateV1{Version: 1, Driver: "node-1", Epoch: 9, Seq: 3, Replicas: []replicaV1{{ID: "a/t", BlockSize: 16,
		Groups: []groupV1{{Rank: 0, Tier: TierGPU, Add: []uint64{1, 2}, Del: []uint64{3}}}}}}
	if b := mustEncode(t, u); string(b) != string(mustMarshal(t, v1)) {
		t.Errorf("version 1 bytes differ from a version 1 sender's")
	}
}

func TestPrimary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layout []KVGroupSpec
		want   int
	}{
		{"none", nil, 0},
		{"full first", []KVGroupSpec{{Index: 0, Kind: KindFull}, {Index: 1, Kind: KindMamba}}, 0},
		{"full second", []KVGroupSpec{{Index: 0, Kind: KindSlidingWindow, Window: 8}, {Index: 1, Kind: KindFull}}, 1},
		{"no full", []KVGroupSpec{{Index: 2, Kind: KindMamba}}, 0},
	} {
		if got := Primary(tc.layout); got != tc.want {
			t.Errorf("%s: Primary %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestLayoutRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layout []KVGroupSpec
		group  int
	}{
		{"index", []KVGroupSpec{{Index: MaxKVGroups}}, 0},
		{"twice", []KVGroupSpec{{Index: 1}, {Index: 1}}, 0},
		{"window", []KVGroupSpec{{Index: 1, Kind: KindSlidingWindow}}, 0},
		{"block size", []KVGroupSpec{{Index: 1, BlockSize: -1}}, 0},
		{"group", nil, MaxKVGroups},
	} {
		u := hybridUpdate()
		u.Replicas[0].Layout = tc.layout
		u.Replicas[0].Groups[0].KVGroup = tc.group
		if _, err := Decode(mustEncode(t, u)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v; want ErrMalformed", tc.name, err)
		}
	}
}

func TestRefusedVersion(t *testing.T) {
	t.Parallel()
	if !RefusedVersion(errors.Join(ErrMalformed, errors.New("version 2; this receiver speaks 1"))) {
		t.Error("an old router's version answer not recognised")
	}
	if RefusedVersion(errors.Join(ErrMalformed, errors.New("epoch 0"))) {
		t.Error("another malformed answer taken for a version refusal")
	}
}

// FuzzDecodeV2 fuzzes the version 2 decoder with every group field; an
// accepted body re-encodes and decodes to the same update.
func FuzzDecodeV2(f *testing.F) {
	f.Add(mustEncode(f, hybridUpdate()))
	u := hybridUpdate()
	u.Snapshot = true
	u.Replicas[0].Groups = []Group{{Tier: TierCPU, Add: []uint64{7}, KVGroup: 2}}
	u.Replicas[0].Layout = append(u.Replicas[0].Layout, KVGroupSpec{Index: 2, Kind: KindMamba, BlockSize: 32})
	f.Add(mustEncode(f, u))
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := Decode(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		b, err := Encode(u)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := Decode(b)
		if err != nil {
			t.Fatalf("decode of the re-encoding: %v", err)
		}
		if u.Version == Version && !reflect.DeepEqual(again, u) {
			t.Fatalf("round trip changed %+v into %+v", u, again)
		}
	})
}

func mustMarshal(t testing.TB, v *updateV1) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A driver of version 1 (its exact bytes) is accepted by this receiver,
// its blocks as group 0.
func TestReceiverTakesVersion1Driver(t *testing.T) {
	t.Parallel()
	m := NewMirror()
	r, err := NewReceiver("secret", m)
	if err != nil {
		t.Fatal(err)
	}
	v1 := &updateV1{Version: 1, Driver: "node-1", Epoch: 4, Snapshot: true, Replicas: []replicaV1{{ID: "a", BlockSize: 16,
		Groups: []groupV1{{Rank: 1, Tier: TierGPU, Add: []uint64{5, 6}}}}}}
	if err := r.Receive("Bearer secret", mustMarshal(t, v1)); err != nil {
		t.Fatal(err)
	}
	got := m.Blocks("node-1", "a")
	slices.SortFunc(got, func(a, b BlockRef) int { return int(a.Key) - int(b.Key) })
	want := []BlockRef{{Rank: 1, Tier: TierGPU, Key: 5}, {Rank: 1, Tier: TierGPU, Key: 6}}
	if !slices.Equal(got, want) || m.BlockSize("a") != 16 {
		t.Errorf("mirror %v block size %d; want %v, 16", got, m.BlockSize("a"), want)
	}
}
