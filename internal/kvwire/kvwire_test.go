package kvwire

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"
)

func update(seq uint64, snapshot bool, reps ...Replica) *Update {
	return &Update{Version: Version, Driver: "node-1", Epoch: 7, Seq: seq, Snapshot: snapshot, Replicas: reps}
}

func rep(id string, add ...uint64) Replica {
	return Replica{ID: id, BlockSize: 16, Groups: []Group{{Rank: 0, Tier: TierGPU, Add: add}}}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	u := update(3, false,
		Replica{ID: "a/main", BlockSize: 16, Reset: true, Groups: []Group{
			{Rank: 0, Tier: TierGPU, Add: []uint64{1, 1 << 63}, Del: []uint64{2}},
			{Rank: 2, Tier: TierCPU, Add: []uint64{3}},
		}},
		Replica{ID: "b/main"})
	b, err := Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, u) {
		t.Errorf("round trip\n got %+v\nwant %+v", got, u)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    *Update
	}{
		{"version", &Update{Version: Version + 1, Driver: "d", Epoch: 1}},
		{"no driver", &Update{Version: Version, Epoch: 1}},
		{"epoch 0", &Update{Version: Version, Driver: "d"}},
		{"empty replica id", update(1, false, Replica{})},
		{"duplicate replica", update(1, false, rep("a"), rep("a"))},
		{"bad tier", update(1, false, Replica{ID: "a", Groups: []Group{{Tier: 9}}})},
		{"negative rank", update(1, false, Replica{ID: "a", Groups: []Group{{Rank: -1, Tier: TierGPU}}})},
		{"snapshot with removals", update(1, true, Replica{ID: "a", Groups: []Group{{Tier: TierGPU, Del: []uint64{1}}}})},
		{"negative block size", update(1, false, Replica{ID: "a", BlockSize: -1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
				t.Errorf("err %v; want ErrMalformed", err)
			}
		})
	}
	hugeClaim := []byte{0x96, 0x01, 0xa1, 'd', 0x01, 0x01, 0xc2, 0xdd, 0xff, 0xff, 0xff, 0xff}
	deep := append(slices.Repeat([]byte{0x91}, 40), 0xc0)
	for _, junk := range [][]byte{nil, {0xc1}, {0x96, 0x01}, append(mustEncode(t, update(1, true)), 0), hugeClaim, deep} {
		if _, err := Decode(junk); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%x) err %v; want ErrMalformed", junk, err)
		}
	}
}

func mustEncode(t testing.TB, u *Update) []byte {
	b, err := Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReceiverSequencing(t *testing.T) {
	t.Parallel()
	m := NewMirror()
	r, err := NewReceiver("secret", m)
	if err != nil {
		t.Fatal(err)
	}
	other := update(1, false, rep("a", 9))
	other.Epoch = 8
	steps := []struct {
		name    string
		auth    string
		u       *Update
		wantErr error
	}{
		{"no token", "", update(0, true), ErrUnauthorized},
		{"wrong token", "Bearer nope", update(0, true), ErrUnauthorized},
		{"delta before snapshot", "Bearer secret", update(1, false, rep("a", 1)), ErrSnapshotRequired},
		{"snapshot", "Bearer secret", update(0, true, rep("a", 1, 2)), nil},
		{"next delta", "Bearer secret", update(1, false, Replica{ID: "a", Groups: []Group{{Tier: TierGPU, Add: []uint64{3}, Del: []uint64{1}}}}), nil},
		{"retry is acknowledged, not reapplied", "Bearer secret", update(1, false, rep("a", 99)), nil},
		{"gap", "Bearer secret", update(3, false, rep("a", 4)), ErrSnapshotRequired},
		{"other epoch", "Bearer secret", other, ErrSnapshotRequired},
	}
	for _, s := range steps {
		err := r.Receive(s.auth, mustEncode(t, s.u))
		if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
			t.Fatalf("%s: err %v; want %v", s.name, err, s.wantErr)
		}
	}
	got := m.Blocks("node-1", "a")
	var keys []uint64
	for _, b := range got {
		keys = append(keys, b.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []uint64{2, 3}) {
		t.Errorf("mirror keys %v; want [2 3]", keys)
	}
}

func TestNewReceiverNeedsToken(t *testing.T) {
	t.Parallel()
	if _, err := NewReceiver("", NewMirror()); err == nil {
		t.Error("empty token accepted")
	}
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	m := NewMirror()
	r, err := NewReceiver("secret", m)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, r)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	c := srv.Client()
	tests := []struct {
		name    string
		token   string
		u       *Update
		wantErr error
	}{
		{"delta first", "secret", update(1, false), ErrSnapshotRequired},
		{"wrong token", "x", update(0, true), ErrUnauthorized},
		{"bad version", "secret", &Update{Version: 0, Driver: "d", Epoch: 1}, ErrMalformed},
		{"snapshot", "secret", update(0, true, rep("a", 1)), nil},
		{"delta", "secret", update(1, false, rep("b", 2)), nil},
	}
	for _, tt := range tests {
		err := Send(ctx, c, srv.URL, tt.token, tt.u)
		if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
			t.Errorf("%s: err %v; want %v", tt.name, err, tt.wantErr)
		}
	}
	if got := m.Replicas("node-1"); len(got) != 2 {
		t.Errorf("replicas %v; want a and b", got)
	}
	resp, err := c.Get(srv.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET status %d; want 405", resp.StatusCode)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(mustEncode(f, update(1, false, rep("a", 1, 2))))
	f.Add(mustEncode(f, update(0, true, Replica{ID: "b", Reset: true, Groups: []Group{{Rank: 1, Tier: TierCPU, Del: []uint64{5}}}})))
	f.Add(mustEncode(f, update(2, false, Replica{ID: "c", BlockSize: 16, OffloadBlockSize: 64, Groups: []Group{{Tier: TierCPU, Add: []uint64{7}}}})))
	f.Add([]byte{0x96, 0x01, 0xa1, 'd', 0x01, 0x01, 0xc2, 0x90})
	f.Fuzz(func(t *testing.T, body []byte) {
		u, err := Decode(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if err := u.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid update: %v", err)
		}
		if _, err := Encode(u); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

func TestReceiverExpire(t *testing.T) {
	t.Parallel()
	m := NewMirror()
	r, err := NewReceiver("secret", m)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Receive("Bearer secret", mustEncode(t, update(0, true, rep("a", 1)))); err != nil {
		t.Fatal(err)
	}
	if gone := r.Expire(time.Now().Add(-time.Hour)); len(gone) != 0 {
		t.Fatalf("expired %v; the driver was just heard from", gone)
	}
	if gone := r.Expire(time.Now().Add(time.Second)); !slices.Equal(gone, []string{"node-1"}) {
		t.Fatalf("expired %v; want [node-1]", gone)
	}
	if got := m.Replicas("node-1"); len(got) != 0 {
		t.Errorf("mirror still holds %v for an expired driver", got)
	}
	if err := r.Receive("Bearer secret", mustEncode(t, update(1, false, rep("a", 2)))); !errors.Is(err, ErrSnapshotRequired) {
		t.Errorf("delta after expiry: %v; want ErrSnapshotRequired", err)
	}
}
