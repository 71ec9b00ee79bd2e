package kvwire

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Errors a receiver reports and Send returns, checked with errors.Is.
var (
	ErrUnauthorized     = errors.New("missing or wrong bearer token")
	ErrMalformed        = errors.New("malformed KV update")
	ErrSnapshotRequired = errors.New("snapshot required")
)

// MaxBody bounds an encoded Update: a snapshot of a few million blocks.
const MaxBody = 64 << 20

// Encode returns u's msgpack encoding, in the shape of u.Version (toV1:
// only each replica's Primary group; toV2: no Approx; toV3: no
// OffloadBlockSize).
func Encode(u *Update) ([]byte, error) {
	var v any = u
	switch u.Version {
	case 1:
		v = toV1(u)
	case 2:
		v = toV2(u)
	case 3:
		v = toV3(u)
	}
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode KV update: %w", err)
	}
	return b, nil
}

// Decode parses and validates an encoded Update. Every error wraps
// ErrMalformed and names the problem.
func Decode(body []byte) (*Update, error) {
	if err := checkBounds(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	ver, err := peekVersion(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if ver < MinVersion || ver > Version {
		return nil, fmt.Errorf("%w: version %d; this receiver speaks %d to %d", ErrMalformed, ver, MinVersion, Version)
	}
	var (
		u  *Update
		v1 updateV1
		v2 updateV2
		v3 updateV3
	)
	r := bytes.NewReader(body)
	dec := msgpack.NewDecoder(r)
	switch ver {
	case 1:
		err = dec.Decode(&v1)
		u = fromV1(&v1)
	case 2:
		err = dec.Decode(&v2)
		u = fromV2(&v2)
	case 3:
		err = dec.Decode(&v3)
		u = fromV3(&v3)
	default:
		u = new(Update)
		err = dec.Decode(u)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, r.Len())
	}
	if err := u.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return u, nil
}

// Validate checks the rules a decoder cannot: the version, identities and
// ranges.
func (u *Update) Validate() error {
	if u.Version < MinVersion || u.Version > Version {
		return fmt.Errorf("version %d; this receiver speaks %d to %d", u.Version, MinVersion, Version)
	}
	if u.Driver == "" {
		return errors.New("empty driver id")
	}
	if u.Epoch == 0 {
		return errors.New("epoch 0")
	}
	seen := make(map[string]bool, len(u.Replicas))
	for i := range u.Replicas {
		r := &u.Replicas[i]
		if r.ID == "" {
			return fmt.Errorf("replica %d: empty id", i)
		}
		if seen[r.ID] {
			return fmt.Errorf("replica %q listed twice", r.ID)
		}
		seen[r.ID] = true
		if r.BlockSize < 0 {
			return fmt.Errorf("replica %q: block size %d", r.ID, r.BlockSize)
		}
		if r.OffloadBlockSize < 0 || r.OffloadBlockSize > 1<<20 {
			return fmt.Errorf("replica %q: offloaded block size %d", r.ID, r.OffloadBlockSize)
		}
		if err := validLayout(r.Layout); err != nil {
			return fmt.Errorf("replica %q: %w", r.ID, err)
		}
		for _, g := range r.Groups {
			if g.KVGroup < 0 || g.KVGroup >= MaxKVGroups {
				return fmt.Errorf("replica %q: kv group %d out of range", r.ID, g.KVGroup)
			}
			if g.Rank < 0 || g.Rank > 1<<16 {
				return fmt.Errorf("replica %q: rank %d out of range", r.ID, g.Rank)
			}
			if g.Tier != TierGPU && g.Tier != TierCPU {
				return fmt.Errorf("replica %q: unknown tier %d", r.ID, g.Tier)
			}
			if u.Snapshot && len(g.Del) > 0 {
				return fmt.Errorf("replica %q: a snapshot carries removals", r.ID)
			}
		}
	}
	return nil
}

// validLayout checks a replica's KV-cache groups: indexes in range and
// listed once, windows and block sizes in range.
func validLayout(l []KVGroupSpec) error {
	if len(l) > MaxKVGroups {
		return fmt.Errorf("%d kv groups; at most %d", len(l), MaxKVGroups)
	}
	var seen [MaxKVGroups]bool
	for _, g := range l {
		switch {
		case g.Index < 0 || g.Index >= MaxKVGroups:
			return fmt.Errorf("kv group %d out of range", g.Index)
		case seen[g.Index]:
			return fmt.Errorf("kv group %d listed twice", g.Index)
		case g.Window < 0 || g.Window > 1<<30:
			return fmt.Errorf("kv group %d: window %d", g.Index, g.Window)
		case g.BlockSize < 0 || g.BlockSize > 1<<20:
			return fmt.Errorf("kv group %d: block size %d", g.Index, g.BlockSize)
		case g.Kind == KindSlidingWindow && g.Window <= 0:
			return fmt.Errorf("kv group %d: a sliding window of %d tokens", g.Index, g.Window)
		}
		seen[g.Index] = true
	}
	return nil
}
