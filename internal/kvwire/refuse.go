package kvwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Refusals: a router may lack room (holder slots, or its key cap) for some
// replicas of an accepted update. It still answers 200, so a driver of any
// version keeps its session, but with a JSON body naming those replicas;
// it holds them in approximate routing and, once room frees, asks the
// driver for a snapshot with the protocol's 409, which every driver
// answers. A driver that reads the body (Send returns a *RefusedError)
// learns which replicas wait and why.

// ErrRefused is wrapped by Send's *RefusedError: the update was applied
// except for the replicas the router had no room for.
var ErrRefused = errors.New("router has no room for some replicas")

// Refusal is one replica whose state a router did not take, and why.
type Refusal struct {
	Replica string `json:"replica"`
	Reason  string `json:"reason"`
}

// RefusedError is Send's answer to an update applied but for the refused
// replicas; errors.Is(err, ErrRefused) holds. The session goes on: the
// router asks for a snapshot (409) when room frees.
type RefusedError struct{ Refused []Refusal }

func (e *RefusedError) Error() string {
	parts := make([]string, 0, min(len(e.Refused), 3))
	for _, r := range e.Refused[:min(len(e.Refused), 3)] {
		parts = append(parts, r.Replica+": "+r.Reason)
	}
	more := ""
	if len(e.Refused) > 3 {
		more = fmt.Sprintf(" and %d more", len(e.Refused)-3)
	}
	return fmt.Sprintf("%v: %s%s", ErrRefused, strings.Join(parts, "; "), more)
}

func (e *RefusedError) Unwrap() error { return ErrRefused }

// RefusingSink is a Sink that may refuse replicas of an update for lack of
// room; the Receiver then answers with the refusals.
type RefusingSink interface {
	Sink
	ApplyRefusing(u *Update) []Refusal
}

// Resyncer is a Sink that asks for snapshots on its own, e.g. when room
// freed for a replica it refused: the Receiver drops the sessions of the
// drivers it names before it sequences the next update, so their next
// delta is answered 409.
type Resyncer interface {
	TakeResyncs() []string
}

// refusedBody is the JSON body of a 200 answer with refusals.
type refusedBody struct {
	Refused []Refusal `json:"refused"`
}

// maxRefusalsInBody bounds the answer (the driver needs the names, not
// every one of thousands).
const maxRefusalsInBody = 256

func writeRefused(w http.ResponseWriter, rs []Refusal) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(refusedBody{Refused: rs[:min(len(rs), maxRefusalsInBody)]})
}

// parseRefused reads a 200 answer's body: a *RefusedError when it names
// refused replicas, nil otherwise (204, an empty body, or any other body).
func parseRefused(body []byte) error {
	var rb refusedBody
	if len(body) == 0 || json.Unmarshal(body, &rb) != nil || len(rb.Refused) == 0 {
		return nil
	}
	return &RefusedError{Refused: rb.Refused}
}
