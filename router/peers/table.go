package peers

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/load"
)

// Sink takes the peers' loads summed per replica; load.Tracker is
// one.
type Sink interface {
	SetPeerLoads(map[string]load.Peer)
}

// Table holds the newest message of every peer router that is still
// reporting, and gives their sum per replica to a Sink whenever it
// changes. It serves Path as an http.Handler. Safe for concurrent use.
type Table struct {
	self   string
	token  []byte
	sink   Sink
	expiry time.Duration
	now    func() time.Time

	mu      sync.Mutex
	peers   map[string]*report
	sum     map[string]load.Peer // over peers, kept as reports come and go
	tenants TenantSink
	lister  Lister

	accepted, rejected, stale, own, unlisted, replaced atomic.Uint64
}

type report struct {
	seq      uint64
	at       time.Time
	ip       netip.Addr // where it came from; zero when Put directly
	replicas []Replica
}

// NewTable returns a Table for the router whose instance id is self (its
// own messages, should one reach it, are ignored), accepting messages
// that carry token and forgetting a peer silent for expiry.
func NewTable(self, token string, sink Sink, expiry time.Duration) (*Table, error) {
	switch {
	case self == "":
		return nil, errors.New("peer table: empty instance id")
	case token == "":
		return nil, errors.New("peer table: empty shared token")
	case expiry <= 0:
		return nil, fmt.Errorf("peer table: expiry %s must be positive", expiry)
	}
	return &Table{self: self, token: []byte("Bearer " + token), sink: sink, expiry: expiry, now: time.Now, peers: map[string]*report{}, sum: map[string]load.Peer{}}, nil
}

// SetTenantSink makes the table hand every accepted message's tenants to
// s, and tell it of peers that expire. Call it before serving.
func (t *Table) SetTenantSink(s TenantSink) {
	t.mu.Lock()
	t.tenants = s
	t.mu.Unlock()
}

// Self is the instance id the Table was made for.
func (t *Table) Self() string { return t.self }

// Put takes one peer's message from within the process, unchecked
// against the Lister; false when it is older than the one held from that
// peer, or the router's own.
func (t *Table) Put(m Message) bool {
	ok, _ := t.put(m, netip.Addr{}, false)
	return ok
}

// put takes a message that came from ip, checked against the Lister (or
// MaxPeers) when checkSource; the error says why it was refused.
func (t *Table) put(m Message, ip netip.Addr, checkSource bool) (bool, error) {
	if m.Router == t.self {
		t.own.Add(1)
		return false, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if checkSource {
		if err := t.admitLocked(m.Router, ip); err != nil {
			return false, err
		}
	}
	if r := t.peers[m.Router]; r != nil && m.Seq <= r.seq {
		t.stale.Add(1)
		return false, nil
	}
	if r := t.peers[m.Router]; r != nil {
		t.addLocked(r.replicas, -1)
	}
	t.peers[m.Router] = &report{seq: m.Seq, at: t.now(), ip: ip, replicas: m.Replicas}
	t.addLocked(m.Replicas, 1)
	t.publishLocked()
	if t.tenants != nil {
		t.tenants.SetPeer(m.Router, usageOf(m.Tenants))
	}
	return true, nil
}

// Expire forgets the peers that sent nothing for the expiry and returns
// their ids: a router that stopped (or lost its way to this one) no longer
// counts, and neither do the requests it had in flight.
func (t *Table) Expire() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var gone []string
	cutoff := t.now().Add(-t.expiry)
	for id, r := range t.peers {
		if r.at.Before(cutoff) {
			t.dropLocked(id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		t.publishLocked()
	}
	return gone
}

// Peers is how many peers are reporting.
func (t *Table) Peers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.peers)
}

// Stats counts messages by result.
type Stats struct {
	Accepted uint64
	Rejected uint64 // a bad token or a malformed message
	Stale    uint64 // older than one already held from the same peer
	// Own counts the router's own messages, sent to itself: its publisher
	// did not recognise itself among the Consul instances (an advertised
	// address that differs from the registered one).
	Own uint64
	// Unlisted counts messages refused for their source: an address
	// where Consul lists no router, a router id heard from another
	// address before, or a full table (no Lister).
	Unlisted uint64
	// Replaced counts peers dropped for a new router id from the same
	// address, with as many routers listed there as peers held: a
	// restarted router, or one that claims ids it should not.
	Replaced uint64
}

// Stats returns the message counts.
func (t *Table) Stats() Stats {
	return Stats{Accepted: t.accepted.Load(), Rejected: t.rejected.Load(), Stale: t.stale.Load(), Own: t.own.Load(),
		Unlisted: t.unlisted.Load(), Replaced: t.replaced.Load()}
}

// addLocked adds a report's replicas to the sum (sign 1) or takes them
// out of it (-1): a message costs its own size, not every peer's.
func (t *Table) addLocked(rs []Replica, sign int) {
	for _, rep := range rs {
		p := t.sum[rep.ID]
		p.InFlight += sign * rep.InFlight
		p.InFlightTokens += sign * rep.InFlightTokens
		p.PrefillTokens += sign * rep.PrefillTokens
		if p == (load.Peer{}) {
			delete(t.sum, rep.ID)
		} else {
			t.sum[rep.ID] = p
		}
	}
}

// publishLocked hands the sink a copy of the sum, which it keeps.
func (t *Table) publishLocked() {
	t.sink.SetPeerLoads(maps.Clone(t.sum))
}

// ServeHTTP accepts one message at Path (see the package doc for the
// answers).
func (t *Table) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		t.fail(w, http.StatusMethodNotAllowed, fmt.Errorf("method %s: use POST", r.Method))
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), t.token) != 1 {
		t.fail(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		code := http.StatusBadRequest
		if errors.As(err, new(*http.MaxBytesError)) {
			code = http.StatusRequestEntityTooLarge
		}
		t.fail(w, code, fmt.Errorf("peer load: %w", err))
		return
	}
	if err := checkReplicaCount(body); err != nil {
		t.fail(w, http.StatusBadRequest, err)
		return
	}
	m, err := Decode(bytes.NewReader(body))
	if err != nil {
		t.fail(w, http.StatusBadRequest, err)
		return
	}
	ok, err := t.put(m, remoteIP(r.RemoteAddr), true)
	if err != nil {
		var se *sourceError
		errors.As(err, &se)
		t.unlisted.Add(1)
		writeError(w, se.code, fmt.Errorf("peer load from router %q: %w", m.Router, err))
		return
	}
	if ok {
		t.accepted.Add(1)
	}
	w.WriteHeader(http.StatusNoContent)
}

func (t *Table) fail(w http.ResponseWriter, code int, err error) {
	t.rejected.Add(1)
	writeError(w, code, err)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}
