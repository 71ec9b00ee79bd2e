package respstore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// IDPrefix starts every response id, as OpenAI's and vLLM's do.
const IDPrefix = "resp_"

const (
	tagBytes    = 8
	randomBytes = 16
	idLen       = len(IDPrefix) + 2*(tagBytes+randomBytes)
)

// Tag names the router that holds a response: a hash of its ingest
// address, which every router can compute from the routers Consul lists,
// and which tells a client nothing about the fleet's addresses.
type Tag [tagBytes]byte

// TagOf returns the tag of the router whose ingest listener is at
// hostport (as its peers reach it).
func TagOf(hostport string) Tag {
	sum := sha256.Sum256([]byte(hostport))
	var t Tag
	copy(t[:], sum[:tagBytes])
	return t
}

// NewID returns a fresh response id held by the router tagged holder.
func NewID(holder Tag) string {
	var b [tagBytes + randomBytes]byte
	copy(b[:], holder[:])
	_, _ = rand.Read(b[tagBytes:]) // crypto/rand.Read never fails (Go 1.24)
	return IDPrefix + hex.EncodeToString(b[:])
}

// HolderOf returns the tag an id names, and false for an id no llmgw
// router made (a client's typo, or an engine's own id).
func HolderOf(id string) (Tag, bool) {
	var t Tag
	if len(id) != idLen || !strings.HasPrefix(id, IDPrefix) {
		return t, false
	}
	rest := id[len(IDPrefix):]
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return t, false
		}
	}
	_, err := hex.Decode(t[:], []byte(rest[:2*tagBytes]))
	return t, err == nil
}
