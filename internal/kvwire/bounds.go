package kvwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
)

// checkBounds walks a msgpack value without decoding it and rejects any
// container or string whose claimed length exceeds the bytes left, or
// nesting deeper than maxDepth. The msgpack library allocates what a
// length claims before reading, so an unchecked 5-byte header could ask for
// gigabytes; after this check every claim is backed by real bytes.
//
// Backed claims can still amplify: a one-byte nil decodes into a 64-byte
// Group. So the walk also adds up what the decoded Update will hold (each
// Replica, Group and key by its size in memory, strings by their bytes) and
// rejects a body that would decode to more than maxAmplification times its
// size, past a small allowance: memory stays within a small multiple of
// what was sent. A real update is under 1.5 times (keys travel as 9-byte
// uint64s and fill 8 bytes).
func checkBounds(b []byte) error {
	cost := 0
	off, err := walk(b, 0, 0, &cost)
	if err != nil {
		return err
	}
	if off != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-off)
	}
	if cost > maxAmplification*len(b)+amplificationAllowance {
		return fmt.Errorf("a %d-byte body that decodes to %d bytes: over %d times its size", len(b), cost, maxAmplification)
	}
	return nil
}

const (
	maxAmplification       = 4
	amplificationAllowance = 64 << 10
)

// elemCost is the memory one array element takes once decoded, by the
// nesting depth of the element in an Update: its Replicas at depth 2, their
// Groups at depth 4, the groups' keys at depth 6.
var elemCost = map[int]int{
	2: int(reflect.TypeFor[Replica]().Size()),
	4: int(reflect.TypeFor[Group]().Size()),
	6: int(reflect.TypeFor[uint64]().Size()),
}

const maxDepth = 16

var errShort = errors.New("truncated")

func walk(b []byte, off, depth int, cost *int) (int, error) {
	if depth > maxDepth {
		return 0, fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	if off >= len(b) {
		return 0, errShort
	}
	c := b[off]
	off++
	size := func(n int) (int, error) {
		if len(b)-off < n {
			return 0, errShort
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[off])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[off:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[off:]))
		}
		off += n
		if v > uint64(len(b)-off) {
			return 0, fmt.Errorf("length %d exceeds the %d bytes left", v, len(b)-off)
		}
		return int(v), nil
	}
	skip := func(n int) (int, error) {
		if len(b)-off < n {
			return 0, errShort
		}
		return off + n, nil
	}
	items := func(n int) (int, error) {
		var err error
		*cost += n * elemCost[depth+1]
		for range n {
			if off, err = walk(b, off, depth+1, cost); err != nil {
				return 0, err
			}
		}
		return off, nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return off, nil
	case c&0xe0 == 0xa0:
		*cost += int(c & 0x1f)
		return skip(int(c & 0x1f))
	case c&0xf0 == 0x90:
		return items(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return items(2 * int(c&0x0f))
	}
	switch c {
	case 0xcc, 0xd0:
		return skip(1)
	case 0xcd, 0xd1:
		return skip(2)
	case 0xca, 0xce, 0xd2:
		return skip(4)
	case 0xcb, 0xcf, 0xd3:
		return skip(8)
	case 0xd9, 0xc4:
		n, err := size(1)
		if err != nil {
			return 0, err
		}
		*cost += n // a string's or bin's bytes, held once decoded
		return skip(n)
	case 0xda, 0xc5:
		n, err := size(2)
		if err != nil {
			return 0, err
		}
		*cost += n // a string's or bin's bytes, held once decoded
		return skip(n)
	case 0xdb, 0xc6:
		n, err := size(4)
		if err != nil {
			return 0, err
		}
		*cost += n // a string's or bin's bytes, held once decoded
		return skip(n)
	case 0xdc, 0xdd, 0xde, 0xdf:
		n, err := size(2 << ((c - 0xdc) % 2))
		if err != nil {
			return 0, err
		}
		if c >= 0xde {
			if n > (len(b)-off)/2 {
				return 0, fmt.Errorf("map of %d pairs exceeds the bytes left", n)
			}
			n *= 2
		}
		return items(n)
	}
	return 0, fmt.Errorf("unsupported type byte %#02x", c)
}
