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

// Encode returns u's msgpack encoding.
func Encode(u *Update) ([]byte, error) {
	b, err := msgpack.Marshal(u)
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
	var u Update
	r := bytes.NewReader(body)
	dec := msgpack.NewDecoder(r)
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, r.Len())
	}
	if err := u.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return &u, nil
}

// Validate checks the rules a decoder cannot: the version, identities and
// ranges.
func (u *Update) Validate() error {
	if u.Version != Version {
		return fmt.Errorf("version %d; this receiver speaks %d", u.Version, Version)
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
		for _, g := range r.Groups {
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
