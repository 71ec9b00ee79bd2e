package server

import (
	"context"
	"net"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/respstore"
)

// startConversations makes the Responses API's conversation store: this
// router's own, bounded by responses_store_bytes and responses_ttl, and
// the other routers' through their ingest listeners when peer sharing
// is on (the same Consul list and peer_token as peer loads). It runs before
// the gateway, which serves from it, and sweeps expired entries until
// ctx ends.
func (s *Server) startConversations(ctx context.Context) error {
	local := respstore.New(respstore.Options{MaxBytes: s.cfg.ResponsesStoreBytes, TTL: s.cfg.ResponsesTTL})
	s.conv = &respstore.Fleet{Local: local, Self: s.ownTag}
	if s.peerTable != nil {
		pc, err := s.peerClient()
		if err != nil {
			return err
		}
		s.conv.Holder, s.conv.Client, s.conv.Token = s.routerTagged, pc, s.cfg.PeerToken
	}
	s.goLoop(ctx, max(s.cfg.ResponsesTTL/8, 1), local.Sweep)
	return nil
}

// ownTag is this router's response-id tag: its ingest address as its
// peers reach it. The gateway asks only once listeners serve.
func (s *Server) ownTag() respstore.Tag {
	if s.ingestLn == nil {
		return respstore.Tag{}
	}
	return respstore.TagOf(net.JoinHostPort(s.advertised(), strconv.Itoa(port(s.ingestLn))))
}

// routerTagged returns the ingest URL of the listed router whose tag is t.
func (s *Server) routerTagged(t respstore.Tag) (string, bool) {
	listed := s.routersListed.Load()
	if listed == nil || listed.routerWatch == nil {
		return "", false
	}
	rs, _ := listed.Current()
	for _, r := range rs {
		hp := net.JoinHostPort(r.Address, strconv.Itoa(r.IngestPort))
		if respstore.TagOf(hp) == t {
			return scheme(s.cfg.HTTP.IngestTLS) + "://" + hp, true
		}
	}
	return "", false
}

// conversationMetrics reads the store's counts at each scrape.
func conversationMetrics(st *respstore.Store) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_responses_stored", Help: "Responses API conversations this router holds."},
			func() float64 { return float64(st.Stats().Entries) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "llmgw_responses_stored_bytes", Help: "Bytes of the conversations this router holds (bounded by responses_store_bytes)."},
			func() float64 { return float64(st.Stats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_responses_evicted_total", Help: "Conversations dropped for room before their TTL."},
			func() float64 { return float64(st.Stats().Evicted) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "llmgw_responses_expired_total", Help: "Conversations dropped at the end of their TTL."},
			func() float64 { return float64(st.Stats().Expired) }),
	}
}
