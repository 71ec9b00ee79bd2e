package kvwire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// The version 1, 2 and 3 shapes. A struct encoded as an array must be
// decoded into one with the same number of fields, so the versions have
// their own types; an older body is decoded into these and converted.
type (
	updateV3 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Version  int
		Driver   string
		Epoch    uint64
		Seq      uint64
		Snapshot bool
		Replicas []replicaV3
	}
	replicaV3 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		ID        string
		BlockSize int
		Reset     bool
		Groups    []Group
		Layout    []KVGroupSpec
		Approx    string
	}
	updateV2 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Version  int
		Driver   string
		Epoch    uint64
		Seq      uint64
		Snapshot bool
		Replicas []replicaV2
	}
	replicaV2 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		ID        string
		BlockSize int
		Reset     bool
		Groups    []Group
		Layout    []KVGroupSpec
	}
	updateV1 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Version  int
		Driver   string
		Epoch    uint64
		Seq      uint64
		Snapshot bool
		Replicas []replicaV1
	}
	replicaV1 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		ID        string
		BlockSize int
		Reset     bool
		Groups    []groupV1
	}
	groupV1 struct {
		//lint:ignore U1000 read by the msgpack library (reflection): the struct encodes as an array
		_msgpack struct{} `msgpack:",as_array"`

		Rank int
		Tier Tier
		Add  []uint64
		Del  []uint64
	}
)

// Primary is the KV group a version 1 peer is told about: the lowest
// full-attention (or unknown-kind) group of layout, else group 0. Its keys
// are the ones every prompt block of a full-attention model has, so a
// version 1 router routes a hybrid replica as if it had that group only.
func Primary(layout []KVGroupSpec) int {
	best := -1
	for _, g := range layout {
		if (g.Kind == KindFull || g.Kind == KindUnknown) && (best < 0 || g.Index < best) {
			best = g.Index
		}
	}
	return max(best, 0)
}

// blockSizeOf is the block size of group g of layout, or def.
func blockSizeOf(layout []KVGroupSpec, g, def int) int {
	for _, s := range layout {
		if s.Index == g && s.BlockSize > 0 {
			return s.BlockSize
		}
	}
	return def
}

// toV1 is u in version 1's shape: each replica keeps only its Primary
// group's blocks (a version 1 receiver would merge the groups' keys and
// let one group's removal drop another's residency).
func toV1(u *Update) *updateV1 {
	v := &updateV1{Version: 1, Driver: u.Driver, Epoch: u.Epoch, Seq: u.Seq, Snapshot: u.Snapshot,
		Replicas: make([]replicaV1, 0, len(u.Replicas))}
	for _, r := range u.Replicas {
		p := Primary(r.Layout)
		rv := replicaV1{ID: r.ID, BlockSize: blockSizeOf(r.Layout, p, r.BlockSize), Reset: r.Reset}
		for _, g := range r.Groups {
			if g.KVGroup == p {
				rv.Groups = append(rv.Groups, groupV1{Rank: g.Rank, Tier: g.Tier, Add: g.Add, Del: g.Del})
			}
		}
		v.Replicas = append(v.Replicas, rv)
	}
	return v
}

func fromV1(v *updateV1) *Update {
	u := &Update{Version: v.Version, Driver: v.Driver, Epoch: v.Epoch, Seq: v.Seq, Snapshot: v.Snapshot}
	if v.Replicas != nil {
		u.Replicas = make([]Replica, len(v.Replicas))
	}
	for i, r := range v.Replicas {
		rep := Replica{ID: r.ID, BlockSize: r.BlockSize, Reset: r.Reset}
		if r.Groups != nil {
			rep.Groups = make([]Group, len(r.Groups))
		}
		for j, g := range r.Groups {
			rep.Groups[j] = Group{Rank: g.Rank, Tier: g.Tier, Add: g.Add, Del: g.Del}
		}
		u.Replicas[i] = rep
	}
	return u
}

// toV2 is u in version 2's shape, without the replicas' Approx: a version
// 2 router cannot be told why a replica's blocks are withheld, and routes
// it as one holding nothing.
func toV2(u *Update) *updateV2 {
	v := &updateV2{Version: 2, Driver: u.Driver, Epoch: u.Epoch, Seq: u.Seq, Snapshot: u.Snapshot,
		Replicas: make([]replicaV2, 0, len(u.Replicas))}
	for _, r := range u.Replicas {
		v.Replicas = append(v.Replicas, replicaV2{ID: r.ID, BlockSize: r.BlockSize, Reset: r.Reset, Groups: r.Groups, Layout: r.Layout})
	}
	return v
}

func fromV2(v *updateV2) *Update {
	u := &Update{Version: v.Version, Driver: v.Driver, Epoch: v.Epoch, Seq: v.Seq, Snapshot: v.Snapshot}
	if v.Replicas != nil {
		u.Replicas = make([]Replica, len(v.Replicas))
	}
	for i, r := range v.Replicas {
		u.Replicas[i] = Replica{ID: r.ID, BlockSize: r.BlockSize, Reset: r.Reset, Groups: r.Groups, Layout: r.Layout}
	}
	return u
}

// toV3 is u in version 3's shape, without the replicas'
// OffloadBlockSize: a version 3 router predicts a CPU-tier hit block by
// block, as it did before version 4.
func toV3(u *Update) *updateV3 {
	v := &updateV3{Version: 3, Driver: u.Driver, Epoch: u.Epoch, Seq: u.Seq, Snapshot: u.Snapshot,
		Replicas: make([]replicaV3, 0, len(u.Replicas))}
	for _, r := range u.Replicas {
		v.Replicas = append(v.Replicas, replicaV3{ID: r.ID, BlockSize: r.BlockSize, Reset: r.Reset, Groups: r.Groups, Layout: r.Layout, Approx: r.Approx})
	}
	return v
}

func fromV3(v *updateV3) *Update {
	u := &Update{Version: v.Version, Driver: v.Driver, Epoch: v.Epoch, Seq: v.Seq, Snapshot: v.Snapshot}
	if v.Replicas != nil {
		u.Replicas = make([]Replica, len(v.Replicas))
	}
	for i, r := range v.Replicas {
		u.Replicas[i] = Replica{ID: r.ID, BlockSize: r.BlockSize, Reset: r.Reset, Groups: r.Groups, Layout: r.Layout, Approx: r.Approx}
	}
	return u
}

// peekVersion reads the Version, the first element of an encoded Update.
func peekVersion(body []byte) (int, error) {
	d := msgpack.NewDecoder(bytes.NewReader(body))
	n, err := d.DecodeArrayLen()
	if err != nil {
		return 0, fmt.Errorf("update is not an array: %w", err)
	}
	if n < 1 {
		return 0, errors.New("empty update array")
	}
	v, err := d.DecodeInt()
	if err != nil {
		return 0, fmt.Errorf("version: %w", err)
	}
	return v, nil
}

// RefusedVersion reports whether err (from Send) is a router refusing the
// version of the update sent: a router of an older version answers a
// newer body with 400, naming the version it speaks or failing to decode
// the longer arrays. The sender then speaks the version before to it.
func RefusedVersion(err error) bool {
	if !errors.Is(err, ErrMalformed) {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "this receiver speaks") || strings.Contains(m, "array-encoded struct")
}
