package peers

import (
	"fmt"
	"net"
	"net/netip"
)

// MaxPeers bounds the peers a Table holds when it has no Lister to bound
// them by: past it a new router id is refused until one expires.
const MaxPeers = 1024

// Lister says how many routers Consul (or Nomad) lists at an IP address,
// this one included. A Table with a Lister takes a message only from an
// address that has a router listed, and holds at most that many peers
// from it: the shared peer_token proves a sender is one of the fleet's
// routers, and the listing bounds how many it can claim to be.
type Lister interface {
	// ListedAt is the number of routers listed at ip; known is false
	// until the list has been read once.
	ListedAt(ip netip.Addr) (n int, known bool)
}

// SetLister makes the table check each message's source address against
// l. Call it before serving.
func (t *Table) SetLister(l Lister) {
	t.mu.Lock()
	t.lister = l
	t.mu.Unlock()
}

// sourceError refuses a message for where it came from, with the HTTP
// status to answer: 403 an unlisted source, 503 a list not read yet or a
// full table (the sender retries at its next tick).
type sourceError struct {
	code int
	msg  string
}

func (e *sourceError) Error() string { return e.msg }

// admitLocked decides whether a message from router id at ip may enter
// the table. A router id already held from ip is always admitted. A new
// one is admitted while ip has fewer peers than routers listed there;
// at the limit, the one heard from least recently is dropped to make
// room, since that is what a router restarting (with a new id) looks
// like. Without a Lister the table holds at most MaxPeers.
func (t *Table) admitLocked(id string, ip netip.Addr) error {
	if t.lister == nil {
		if t.peers[id] == nil && len(t.peers) >= MaxPeers {
			return &sourceError{503, fmt.Sprintf("peer table full: %d peers (a new peer is taken when one expires)", MaxPeers)}
		}
		return nil
	}
	n, known := t.lister.ListedAt(ip)
	switch {
	case !known:
		return &sourceError{503, "the routers' list has not been read yet; retry"}
	case n == 0:
		return &sourceError{403, fmt.Sprintf("source %s is not the address of a router Consul or Nomad lists", ip)}
	}
	if r := t.peers[id]; r != nil {
		if r.ip != ip {
			return &sourceError{403, fmt.Sprintf("router %q reported from %s before, now from %s", id, r.ip, ip)}
		}
		return nil
	}
	var oldest string
	held := 0
	for pid, r := range t.peers {
		if r.ip != ip {
			continue
		}
		held++
		if oldest == "" || r.order < t.peers[oldest].order {
			oldest = pid
		}
	}
	if held >= n {
		t.dropLocked(oldest)
		t.replaced.Add(1)
	}
	return nil
}

// dropLocked forgets one peer and what it reported.
func (t *Table) dropLocked(id string) {
	r := t.peers[id]
	if r == nil {
		return
	}
	delete(t.peers, id)
	t.releaseLocked(r, true)
	if t.tenants != nil {
		t.tenants.ForgetPeer(id)
	}
}

// remoteIP is the address a request came from, IPv4 unmapped.
func remoteIP(remoteAddr string) netip.Addr {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}
