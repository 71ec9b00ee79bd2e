package ctymsgpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Parse decodes data, one msgpack value, into plain Go values: nil, bool,
// int64, uint64 (only above MaxInt64), float64, string, []any and
// map[string]any. Declared lengths are checked against the bytes left before
// anything is allocated, and nesting is bounded by MaxDepth, so hostile
// input costs at most a few times its own size.
func Parse(data []byte) (any, error) {
	if len(data) == 0 {
		return nil, errors.New("ctymsgpack: empty config")
	}
	p := &parser{b: data}
	v, err := p.value(0)
	if err != nil {
		return nil, fmt.Errorf("ctymsgpack: malformed msgpack at byte %d: %w", p.off, err)
	}
	if n := len(p.b) - p.off; n != 0 {
		return nil, fmt.Errorf("ctymsgpack: %d trailing bytes after the config value", n)
	}
	return v, nil
}

type parser struct {
	b   []byte
	off int
}

var errShort = errors.New("unexpected end of data")

func (p *parser) take(n int) ([]byte, error) {
	if n < 0 || n > len(p.b)-p.off {
		return nil, errShort
	}
	s := p.b[p.off : p.off+n]
	p.off += n
	return s, nil
}

func (p *parser) uint(size int) (uint64, error) {
	s, err := p.take(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(s[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(s)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(s)), nil
	}
	return binary.BigEndian.Uint64(s), nil
}

func (p *parser) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	s, err := p.take(1)
	if err != nil {
		return nil, err
	}
	c := s[0]
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0x80 && c <= 0x8f:
		return p.mapOf(int(c&0x0f), depth)
	case c >= 0x90 && c <= 0x9f:
		return p.listOf(int(c&0x0f), depth)
	case c >= 0xa0 && c <= 0xbf:
		return p.str(int(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xd9: // bin8, str8
		return p.sized(1, p.str)
	case 0xc5, 0xda:
		return p.sized(2, p.str)
	case 0xc6, 0xdb:
		return p.sized(4, p.str)
	case 0xca:
		u, err := p.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := p.uint(8)
		return math.Float64frombits(u), err
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := p.uint(1 << (c - 0xcc))
		if err == nil && u <= math.MaxInt64 {
			return int64(u), nil
		}
		return u, err
	case 0xd0:
		u, err := p.uint(1)
		return int64(int8(u)), err
	case 0xd1:
		u, err := p.uint(2)
		return int64(int16(u)), err
	case 0xd2:
		u, err := p.uint(4)
		return int64(int32(u)), err
	case 0xd3:
		u, err := p.uint(8)
		return int64(u), err
	case 0xdc:
		return p.sized(2, func(n int) (any, error) { return p.listOf(n, depth) })
	case 0xdd:
		return p.sized(4, func(n int) (any, error) { return p.listOf(n, depth) })
	case 0xde:
		return p.sized(2, func(n int) (any, error) { return p.mapOf(n, depth) })
	case 0xdf:
		return p.sized(4, func(n int) (any, error) { return p.mapOf(n, depth) })
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xc7, 0xc8, 0xc9:
		// go-cty writes unknown values as extensions; Nomad never sends them.
		return nil, errors.New("unknown or extension value in config")
	}
	return nil, fmt.Errorf("invalid msgpack code 0x%02x", c)
}

func (p *parser) sized(size int, f func(int) (any, error)) (any, error) {
	n, err := p.uint(size)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(p.b)-p.off) {
		return nil, errShort // every element takes at least one byte
	}
	return f(int(n))
}

func (p *parser) str(n int) (any, error) {
	s, err := p.take(n)
	if err != nil {
		return nil, err
	}
	return string(s), nil
}

func (p *parser) listOf(n, depth int) (any, error) {
	if n > len(p.b)-p.off {
		return nil, errShort
	}
	list := make([]any, n)
	for i := range list {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		list[i] = v
	}
	return list, nil
}

func (p *parser) mapOf(n, depth int) (any, error) {
	if 2*n > len(p.b)-p.off {
		return nil, errShort
	}
	m := make(map[string]any, n)
	for range n {
		k, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("map key is %s, not a string", kind(k))
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	return m, nil
}
