package peers

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	slots   *slots // the replicas reported and their sum over peers
	tenants TenantSink
	lister  Lister

	// publishEvery, when set, coalesces what the sink is given: at most
	// one sum per publishEvery, the rest left to Flush.
	arrivals     uint64 // messages accepted, for report.order
	publishEvery time.Duration
	lastPublish  time.Time
	dirty        bool

	accepted, rejected, stale, own, unlisted, replaced, compact atomic.Uint64
}

type report struct {
	seq uint64
	at  time.Time
	ip  netip.Addr // where it came from; zero when Put directly
	// slots and vals are the replicas reported and their loads. A JSON
	// report holds a reference to each slot; a compact one holds them
	// through dir, the sender's directory as slots, of generation dirGen.
	slots []int32
	vals  []load.Peer
	json  bool
	// order is when it was accepted, counted in messages: which peer was
	// heard from least recently, where clock readings can tie.
	order  uint64
	dirGen uint64
	dir    []int32
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
	return &Table{self: self, token: []byte("Bearer " + token), sink: sink, expiry: expiry, now: time.Now, peers: map[string]*report{}, slots: newSlots()}, nil
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
	rep := &report{seq: m.Seq, at: t.now(), ip: ip, json: true,
		slots: make([]int32, len(m.Replicas)), vals: make([]load.Peer, len(m.Replicas))}
	for i, r := range m.Replicas {
		rep.slots[i] = t.slots.ref(r.ID)
		rep.vals[i] = load.Peer{InFlight: r.InFlight, InFlightTokens: r.InFlightTokens, PrefillTokens: r.PrefillTokens}
	}
	if old := t.peers[m.Router]; old != nil {
		t.releaseLocked(old, true)
	}
	t.acceptLocked(m.Router, rep, m.Tenants)
	return true, nil
}

// acceptLocked makes rep the peer's report and adds it to the sum.
func (t *Table) acceptLocked(peer string, rep *report, tenants []Tenant) {
	t.arrivals++
	rep.order = t.arrivals
	t.peers[peer] = rep
	t.slots.add(rep.slots, rep.vals, 1)
	t.changedLocked()
	if t.tenants != nil {
		t.tenants.SetPeer(peer, usageOf(tenants))
	}
}

// releaseLocked takes a report out of the sum and drops its references;
// a compact report's directory too when withDir.
func (t *Table) releaseLocked(r *report, withDir bool) {
	t.slots.add(r.slots, r.vals, -1)
	if r.json {
		t.slots.unref(r.slots)
	}
	if withDir {
		t.slots.unref(r.dir)
	}
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

// SetPublishEvery coalesces the sums the sink is given: at most one per
// d, as the first message after a quiet d; what arrives sooner waits for
// Flush, which the owner calls every d. A router taking a hundred
// messages a second of thousands of replicas would otherwise hand its
// load tracker a hundred copies of the sum. Call it before serving.
func (t *Table) SetPublishEvery(d time.Duration) {
	t.mu.Lock()
	t.publishEvery = d
	t.mu.Unlock()
}

// Flush gives the sink the sum if it changed since it was last given.
func (t *Table) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirty {
		t.publishLocked()
	}
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
	// Compact counts the accepted messages that came on the compact wire.
	Compact uint64
}

// Stats returns the message counts.
func (t *Table) Stats() Stats {
	return Stats{Accepted: t.accepted.Load(), Rejected: t.rejected.Load(), Stale: t.stale.Load(), Own: t.own.Load(),
		Unlisted: t.unlisted.Load(), Replaced: t.replaced.Load(), Compact: t.compact.Load()}
}

// changedLocked publishes the sum, or leaves it to Flush when one went
// out less than publishEvery ago.
func (t *Table) changedLocked() {
	if t.publishEvery > 0 && t.now().Sub(t.lastPublish) < t.publishEvery {
		t.dirty = true
		return
	}
	t.publishLocked()
}

// publishLocked hands the sink the sum, a map of its own.
func (t *Table) publishLocked() {
	t.dirty, t.lastPublish = false, t.now()
	t.sink.SetPeerLoads(t.slots.loads())
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
	// Every answer says this router reads the compact wire, so a sender
	// moves to it from the next message.
	w.Header().Set(HeaderWire, WireCompact)
	router, ok, err := t.take(r, body)
	if err != nil {
		var se *sourceError
		switch {
		case errors.As(err, &se):
			t.unlisted.Add(1)
			writeError(w, se.code, fmt.Errorf("peer load from router %q: %w", router, err))
		case errors.Is(err, errDirectory):
			t.fail(w, http.StatusConflict, fmt.Errorf("%w from router %q: send it again from its first name", err, router))
		default:
			t.fail(w, http.StatusBadRequest, err)
		}
		return
	}
	if ok {
		t.accepted.Add(1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// take decodes body as its Content-Type says, JSON unless compact, and
// puts it in the table.
func (t *Table) take(r *http.Request, body []byte) (router string, ok bool, err error) {
	ip := remoteIP(r.RemoteAddr)
	if r.Header.Get("Content-Type") == ContentTypeCompact {
		m, err := decodeCompact(body)
		if err != nil {
			return "", false, err
		}
		ok, err := t.putCompact(m, ip)
		if ok {
			t.compact.Add(1)
		}
		return m.Router, ok, err
	}
	if err := checkReplicaCount(body); err != nil {
		return "", false, err
	}
	m, err := Decode(bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	ok, err = t.put(m, ip, true)
	return m.Router, ok, err
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
