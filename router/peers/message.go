package peers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Path is where a router accepts its peers' loads, on the ingest listener.
const Path = "/v1/peer-load"

// Version is the newest message version this package speaks; it reads
// MinVersion too. Version 2 adds Tenants; a router without API keys sends
// version 1, which routers from before version 2 read.
const (
	Version    = 2
	MinVersion = 1
)

// Limits on one message, so a bad peer cannot make a router hold much.
const (
	// MaxBody is the largest message body accepted, in bytes.
	MaxBody = 1 << 20
	// MaxReplicas is the most replicas one message may list.
	MaxReplicas = 4096
	// maxCount bounds every count: more than a billion requests or tokens
	// in flight is a bug, not a load.
	maxCount = 1_000_000_000
	maxID    = 512
)

// Message is one router's complete router-side load.
type Message struct {
	Version int `json:"version"`
	// Router identifies the sending router process; it is new on every
	// start, so a restarted router's sequence starts afresh.
	Router string `json:"router"`
	// Seq grows with every message one Router sends; a receiver ignores a
	// message older than the newest it holds from that Router.
	Seq      uint64    `json:"seq"`
	Replicas []Replica `json:"replicas"`
	// Tenants is the sender's use of each tenant's limits (version 2).
	Tenants []Tenant `json:"tenants,omitempty"`
}

// Replica is the sender's own requests in flight to one replica.
type Replica struct {
	ID             string `json:"replica"`
	InFlight       int    `json:"in_flight"`
	InFlightTokens int    `json:"in_flight_tokens"`
	PrefillTokens  int    `json:"prefill_tokens"`
}

// Decode parses and checks one message: JSON with no unknown fields and
// nothing after it, this Version, a router id, and per replica an id seen
// once and counts between 0 and a billion. The error names the problem.
func Decode(r io.Reader) (Message, error) {
	var m Message
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("peer load: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Message{}, errors.New("peer load: data after the message")
	}
	if err := m.validate(); err != nil {
		return Message{}, fmt.Errorf("peer load: %w", err)
	}
	if len(m.Tenants) == 0 {
		m.Tenants = nil // as encode leaves it out
	}
	return m, nil
}

func (m *Message) validate() error {
	switch {
	case m.Version < MinVersion || m.Version > Version:
		return fmt.Errorf("version %d: this router speaks versions %d to %d", m.Version, MinVersion, Version)
	case m.Router == "" || len(m.Router) > maxID:
		return fmt.Errorf("router id must have 1 to %d bytes, has %d", maxID, len(m.Router))
	case len(m.Replicas) > MaxReplicas:
		return fmt.Errorf("%d replicas: at most %d", len(m.Replicas), MaxReplicas)
	}
	seen := make(map[string]bool, len(m.Replicas))
	for i, r := range m.Replicas {
		if r.ID == "" || len(r.ID) > maxID {
			return fmt.Errorf("replicas[%d]: id must have 1 to %d bytes, has %d", i, maxID, len(r.ID))
		}
		if seen[r.ID] {
			return fmt.Errorf("replicas[%d]: replica %q listed twice", i, r.ID)
		}
		seen[r.ID] = true
		for _, c := range []struct {
			name string
			v    int
		}{{"in_flight", r.InFlight}, {"in_flight_tokens", r.InFlightTokens}, {"prefill_tokens", r.PrefillTokens}} {
			if c.v < 0 || c.v > maxCount {
				return fmt.Errorf("replica %q: %s %d out of range 0..%d", r.ID, c.name, c.v, maxCount)
			}
		}
	}
	return m.validateTenants()
}

// encode is the message's body.
func (m *Message) encode() ([]byte, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(m); err != nil {
		return nil, fmt.Errorf("encode peer load: %w", err)
	}
	return b.Bytes(), nil
}
