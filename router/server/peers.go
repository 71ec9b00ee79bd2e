package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/peers"
)

// startPeerTable makes the table of the other routers' loads, served on
// the ingest listener, when peer sharing is on and there is a peer_token
// to check. The drivers' kv_token is not accepted: a GPU node that holds
// it may report blocks, not load or tenants' spend. A config that sets
// only kv_token, as every config did before peer_token existed, runs
// with peer sharing off and says so at start.
func (s *Server) startPeerTable(ctx context.Context) error {
	if s.cfg.PeerInterval <= 0 {
		return nil
	}
	if s.cfg.PeerToken == "" {
		if s.cfg.KVToken != "" {
			s.log.Warn("peer sharing is off: kv_token authenticates drivers only; set peer_token (LLMGW_PEER_TOKEN), the same on every router and distinct from kv_token, to share loads, tenants' limits and Responses conversations between routers")
		}
		return nil
	}
	id, err := instanceID()
	if err != nil {
		return err
	}
	if s.peerTable, err = peers.NewTable(id, s.cfg.PeerToken, s.tracker, s.cfg.PeerExpiry); err != nil {
		return err
	}
	if s.limiter != nil { // tenants' limits hold across the fleet
		s.peerTable.SetTenantSink(s.limiter)
	}
	// Hand the load tracker the peers' sum at most every tick, however
	// many messages arrive in between.
	s.peerTable.SetPublishEvery(peerPublishEvery)
	s.goLoop(ctx, peerPublishEvery, s.peerTable.Flush)
	s.goLoop(ctx, s.cfg.PeerExpiry/4, func() {
		for _, p := range s.peerTable.Expire() {
			s.log.Info("peer router went silent; its requests no longer count", "peer", p)
		}
	})
	return nil
}

// peerPublishEvery is how often at most the peers' sum reaches the load
// tracker: one publisher interval (the default) behind at worst.
const peerPublishEvery = 50 * time.Millisecond

// startPublisher sends this router's load to every other router Consul
// (or Nomad) lists. It leaves itself out by its service id when it registered itself
// (svcID), else by its advertised address and ingest port, as Nomad
// registers it (jobs/llmgw-router.nomad.hcl); a message that reaches the
// router itself all the same is ignored by its table, and counted.
func (s *Server) startPublisher(ctx context.Context, svcID string) error {
	if s.peerTable == nil {
		return nil
	}
	// Only routers Consul or Nomad lists may report, as many per address
	// as are listed there; until the list is read, messages wait (503).
	// A router without discovery has no list, and holds peers.MaxPeers.
	s.peerTable.SetLister(routerLister{&s.routersListed})
	w, err := s.watchRouters(ctx)
	if err != nil {
		return err
	}
	s.routerWatch = w
	s.routersListed.Store(&listedRouters{w})
	addr, ingest := s.advertised(), port(s.ingestLn)
	self := func(r consul.Router) bool {
		return svcID != "" && strings.HasSuffix(r.ID, "/"+svcID) || r.Address == addr && r.IngestPort == ingest
	}
	targets := func() []peers.Target {
		rs, _ := w.Current()
		out := make([]peers.Target, 0, len(rs))
		for _, r := range rs {
			if !self(r) {
				out = append(out, peers.Target{ID: r.ID, URL: scheme(s.cfg.HTTP.IngestTLS) + "://" + net.JoinHostPort(r.Address, strconv.Itoa(r.IngestPort))})
			}
		}
		return out
	}
	pc, err := s.peerClient()
	if err != nil {
		return err
	}
	opts := peers.PublisherOptions{
		Self: s.peerTable.Self(), Token: s.cfg.PeerToken, Interval: s.cfg.PeerInterval, KeepAlive: config.PeerKeepAlive, MaxRate: config.CapOf(s.cfg.Rates.PeerMaxRate), Client: pc,
		Own: s.tracker.Own, Targets: targets, Logger: s.log.Named("peers"),
	}
	if s.limiter != nil {
		opts.Tenants = s.limiter.Own
	}
	s.peerPub, err = peers.StartPublisher(ctx, opts)
	return err
}

// instanceID names this router process for its peers: the host and a
// random part, new on every start.
func instanceID() (string, error) {
	host, _ := os.Hostname()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("peer instance id: %w", err)
	}
	return host + "/" + hex.EncodeToString(b), nil
}

// routerLister counts the routers listed at an address, for the peer
// table's check of where a message comes from. Consul and Nomad register
// IP addresses; a router listed by a host name matches no source.
type routerLister struct {
	listed *atomic.Pointer[listedRouters]
}

func (l routerLister) ListedAt(ip netip.Addr) (int, bool) {
	w := l.listed.Load()
	if w == nil {
		return 0, false
	}
	rs, ok := w.Current()
	if !ok {
		return 0, false
	}
	n := 0
	for _, r := range rs {
		if a, err := netip.ParseAddr(r.Address); err == nil && a.Unmap() == ip {
			n++
		}
	}
	return n, true
}
