package peers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// The compact wire (version 3) carries the same state as the JSON one in
// a fraction of the bytes and CPU: at 4,096 replicas a JSON message is
// about 450 KB and takes milliseconds to decode, which every router pays
// for every message of every peer. It names replicas by their index in a
// directory the sender keeps and the receiver remembers per peer, so a
// message is a few bytes per replica and a receiver touches no strings:
//
//	magic "LGP3"
//	router     uvarint length, bytes
//	seq        uvarint
//	dir gen    uvarint, non-zero: the sender's directory generation
//	dir from   uvarint: the index of the first name that follows
//	names      uvarint count, then per name: uvarint length, bytes
//	replicas   uvarint count, then per replica: uvarint index delta (the
//	           first is the index, each next one more than its
//	           predecessor), in_flight, in_flight_tokens, prefill_tokens
//	tenants    uvarint count, then per tenant: uvarint length, name,
//	           requests, tokens, in_flight, streams
//
// A message's names extend the directory from "dir from": 0 restates it
// (a new generation, or a receiver that asked), more appends to what the
// receiver holds. A receiver without that generation, or holding fewer
// names than "dir from", answers 409 and the sender restates. Each index
// is an index into that directory, so the receiver resolves it to the
// replica in one array read.
//
// Every router still reads JSON, and sends it to a peer until that peer
// announces the compact wire (HeaderWire in its answer), so routers of
// different versions keep sharing during a rolling upgrade.
const (
	// ContentTypeCompact marks a compact message.
	ContentTypeCompact = "application/x-llmgw-peer-load"
	// HeaderWire is the answer header with which a router announces the
	// newest wire it reads (WireCompact).
	HeaderWire = "Llmgw-Peer-Wire"
	// WireCompact is HeaderWire's value for the compact wire.
	WireCompact = "3"
	// MaxDirectory is the most names one peer's directory may hold: a
	// sender restates a smaller one long before (see directory).
	MaxDirectory = 2 * MaxReplicas
)

var compactMagic = []byte("LGP3")

// compactMessage is a decoded compact message; its names are subslices
// of the body, valid while the body is.
type compactMessage struct {
	Router   string
	Seq      uint64
	DirGen   uint64
	DirFrom  int
	Names    [][]byte
	Replicas []compactReplica
	Tenants  []Tenant
}

// compactReplica is one replica's entry; every count fits 32 bits
// (maxCount), which halves what a message allocates.
type compactReplica struct {
	Index                                   uint32
	InFlight, InFlightTokens, PrefillTokens uint32
}

// errDirectory is a compact message that extends a directory the
// receiver does not hold: the sender must restate it (409).
var errDirectory = errors.New("peer load: directory not held")

// reader reads the compact wire's fields, keeping the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	switch {
	case n <= 0:
		r.err = fmt.Errorf("%s: truncated or overlong number", what)
		return 0
	case v > max:
		r.err = fmt.Errorf("%s %d out of range 0..%d", what, v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(what string, maxLen int) []byte {
	n := int(r.uvarint(what+" length", uint64(maxLen)))
	if r.err != nil {
		return nil
	}
	if n == 0 || n > len(r.b) {
		r.err = fmt.Errorf("%s must have 1 to %d bytes, has %d (%d left in the message)", what, maxLen, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// decodeCompact parses and checks one compact message: the error names
// the field at fault. It bounds every count before allocating for it.
func decodeCompact(body []byte) (compactMessage, error) {
	var m compactMessage
	if !bytes.HasPrefix(body, compactMagic) {
		return m, errors.New("peer load: compact message without its magic")
	}
	r := &reader{b: body[len(compactMagic):]}
	m.Router = string(r.bytes("router id", maxID))
	m.Seq = r.uvarint("seq", 1<<63)
	m.DirGen = r.uvarint("directory generation", 1<<63)
	m.DirFrom = int(r.uvarint("directory start", MaxDirectory))
	names := int(r.uvarint("names", MaxDirectory))
	if r.err == nil && (m.DirGen == 0 || m.DirFrom+names > MaxDirectory) {
		r.err = fmt.Errorf("directory generation %d, names %d..%d: want a non-zero generation and at most %d names", m.DirGen, m.DirFrom, m.DirFrom+names, MaxDirectory)
	}
	for i := 0; i < names && r.err == nil; i++ {
		m.Names = append(m.Names, r.bytes(fmt.Sprintf("names[%d]", i), maxID))
	}
	m.Replicas = r.replicas()
	m.Tenants = r.tenants()
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the message", len(r.b))
	}
	if r.err != nil {
		return compactMessage{}, fmt.Errorf("peer load: %w", r.err)
	}
	return m, nil
}

func (r *reader) replicas() []compactReplica {
	n := int(r.uvarint("replicas", MaxReplicas))
	if r.err != nil || n == 0 {
		return nil
	}
	if n > len(r.b)/4 { // each takes at least four bytes
		r.err = fmt.Errorf("%d replicas in %d bytes", n, len(r.b))
		return nil
	}
	// The hot loop of a router's peer traffic: four numbers a replica,
	// read from a local slice.
	out := make([]compactReplica, n)
	b := r.b
	var v [4]uint64
	next := uint64(0)
	for i := range out {
		for j := range v {
			x, k := binary.Uvarint(b)
			if k <= 0 {
				r.err = fmt.Errorf("replicas[%d]: truncated or overlong number", i)
				return nil
			}
			v[j], b = x, b[k:]
		}
		next += v[0]
		switch {
		case next >= MaxDirectory:
			r.err = fmt.Errorf("replicas[%d]: index %d beyond %d", i, next, MaxDirectory)
		case v[1] > maxCount || v[2] > maxCount || v[3] > maxCount:
			r.err = fmt.Errorf("replicas[%d]: in_flight %d, in_flight_tokens %d, prefill_tokens %d: each must be within 0..%d", i, v[1], v[2], v[3], maxCount)
		}
		if r.err != nil {
			return nil
		}
		out[i] = compactReplica{Index: uint32(next), InFlight: uint32(v[1]), InFlightTokens: uint32(v[2]), PrefillTokens: uint32(v[3])}
		next++
	}
	r.b = b
	return out
}

func (r *reader) tenants() []Tenant {
	n := int(r.uvarint("tenants", MaxTenants))
	if r.err != nil || n == 0 {
		return nil
	}
	if n > len(r.b)/6 {
		r.err = fmt.Errorf("%d tenants in %d bytes", n, len(r.b))
		return nil
	}
	out := make([]Tenant, n)
	for i := range out {
		out[i] = Tenant{Name: string(r.bytes(fmt.Sprintf("tenants[%d]", i), maxID)),
			Requests: int64(r.uvarint("tenant requests", maxTotal)),
			Tokens:   int64(r.uvarint("tenant tokens", maxTotal)),
			InFlight: int(r.uvarint("tenant in_flight", maxCount)),
			Streams:  int(r.uvarint("tenant streams", maxCount))}
		if r.err != nil {
			return nil
		}
	}
	// Names once each, as in JSON.
	m := Message{Version: Version, Tenants: out}
	if err := m.validateTenants(); err != nil {
		r.err = err
		return nil
	}
	return out
}

// compactBody is what every target of one message shares: the replicas
// and tenants after the directory section.
type compactBody struct {
	router string
	seq    uint64
	gen    uint64
	tail   []byte
}

// appendCompactTail encodes replicas (by directory index, ascending) and
// tenants.
func appendCompactTail(b []byte, reps []compactReplica, tenants []Tenant) []byte {
	b = binary.AppendUvarint(b, uint64(len(reps)))
	next := uint32(0)
	for _, rep := range reps {
		b = binary.AppendUvarint(b, uint64(rep.Index-next))
		next = rep.Index + 1
		b = binary.AppendUvarint(b, uint64(rep.InFlight))
		b = binary.AppendUvarint(b, uint64(rep.InFlightTokens))
		b = binary.AppendUvarint(b, uint64(rep.PrefillTokens))
	}
	b = binary.AppendUvarint(b, uint64(len(tenants)))
	for _, t := range tenants {
		b = appendString(b, t.Name)
		b = binary.AppendUvarint(b, uint64(t.Requests))
		b = binary.AppendUvarint(b, uint64(t.Tokens))
		b = binary.AppendUvarint(b, uint64(t.InFlight))
		b = binary.AppendUvarint(b, uint64(t.Streams))
	}
	return b
}

// encode is the message for a target that holds the directory's first
// from names.
func (c *compactBody) encode(names []string, from int) []byte {
	size := len(compactMagic) + len(c.router) + 32 + len(c.tail)
	for _, n := range names[from:] {
		size += len(n) + 2
	}
	b := make([]byte, 0, size)
	b = append(b, compactMagic...)
	b = appendString(b, c.router)
	b = binary.AppendUvarint(b, c.seq)
	b = binary.AppendUvarint(b, c.gen)
	b = binary.AppendUvarint(b, uint64(from))
	b = binary.AppendUvarint(b, uint64(len(names)-from))
	for _, n := range names[from:] {
		b = appendString(b, n)
	}
	return append(b, c.tail...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
