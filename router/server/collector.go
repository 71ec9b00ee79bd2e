package server

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/peers"
)

var (
	descReplica = prometheus.NewDesc("llmgw_replica_info",
		"One per replica, labelled with its model, routing mode and breaker health.", []string{"replica", "model", "mode", "healthy"}, nil)
	descInFlight = prometheus.NewDesc("llmgw_replica_in_flight",
		"Requests this router has in flight to each replica.", []string{"replica"}, nil)
	descPeerInFlight = prometheus.NewDesc("llmgw_replica_peer_in_flight",
		"Requests the other routers report in flight to each replica (router/peers); the scorers count them with this router's own.", []string{"replica"}, nil)
	descPeers = prometheus.NewDesc("llmgw_peer_routers",
		"Other routers whose load reports this router holds (reported within the peer expiry).", nil, nil)
	descPeerMessages = prometheus.NewDesc("llmgw_peer_load_messages_total",
		"Peer load messages by result: accepted, rejected (bad token or malformed), stale (older than one held), own (the router's own: it did not recognise itself among the Consul instances), unlisted (refused for its source: no router listed at that address, or the table full).", []string{"result"}, nil)
	descPeersReplaced = prometheus.NewDesc("llmgw_peer_routers_replaced_total",
		"Peers dropped for a new router id from an address with no more routers listed: a router restarting, or one claiming ids it should not.", nil, nil)
	descWaiting = prometheus.NewDesc("llmgw_replica_waiting",
		"vllm:num_requests_waiting last scraped from each replica.", []string{"replica"}, nil)
	descKVUsage = prometheus.NewDesc("llmgw_replica_kv_usage",
		"vllm:kv_cache_usage_perc last scraped from each replica (0..1).", []string{"replica"}, nil)
	descEventsMissing = prometheus.NewDesc("llmgw_replica_kv_events_missing",
		"1 when a replica advertises KV events but no driver session holds its state (alarm).", []string{"replica"}, nil)
	descBlockSize = prometheus.NewDesc("llmgw_replica_block_size",
		"The KV block size each replica's keys are cut at, by where it was learned: kv_events or metrics (the engine's own), or meta (advertised, the engine's unknown).", []string{"replica", "model", "source"}, nil)
	descBlockSizeMismatch = prometheus.NewDesc("llmgw_replica_block_size_mismatch",
		"1 when a replica's engine reports a block size other than the one it advertises (Consul meta llmgw-block-size): routing uses the engine's, but the job is misconfigured (alarm; /admin/replicas block_size_mismatch says how).", []string{"replica", "model"}, nil)
	descDraining = prometheus.NewDesc("llmgw_replica_draining",
		"1 while a replica drains (Consul check warning or maintenance mode): no new requests, KV state kept.", []string{"replica", "health"}, nil)
	descReplicaBlocks = prometheus.NewDesc("llmgw_replica_index_blocks",
		"Blocks the index holds for each replica, per tier (gpu, cpu).", []string{"replica", "model", "tier"}, nil)
	descReplicaCapacity = prometheus.NewDesc("llmgw_replica_kv_capacity_blocks",
		"KV blocks each replica advertises per tier (vllm:cache_config_info), once scraped.", []string{"replica", "model", "tier"}, nil)
	descOversized = prometheus.NewDesc("llmgw_replica_index_oversized",
		"1 when the index holds more of a replica's blocks on a tier than its advertised capacity with 25% slack: the index missed removals (alarm).", []string{"replica", "model", "tier"}, nil)
	descIndexKeys = prometheus.NewDesc("llmgw_index_keys",
		"Distinct block keys in each model's index.", []string{"model"}, nil)
	descIndexMax = prometheus.NewDesc("llmgw_index_max_keys",
		"Key cap of each model's index from advertised KV capacity (0: unknown).", []string{"model"}, nil)
	descIndexRejected = prometheus.NewDesc("llmgw_index_rejected_total",
		"Block stores dropped because a model's index was at its cap (alarm).", []string{"model"}, nil)
	descResnapshots = prometheus.NewDesc("llmgw_replica_index_resnapshots_total",
		"Fresh snapshots asked of a replica's driver because its index share was oversized (the repair; at most one per driver a minute).", []string{"replica", "model"}, nil)
	descIngest = prometheus.NewDesc("llmgw_kv_ingest_total",
		"KV ingest events by kind (updates, snapshots, keys, unknown_replica: could not be kept, kept: state kept for a replica Consul does not list yet, adopted: kept state moved into the index when it joined, errors).", []string{"kind"}, nil)
	descPendingDiscarded = prometheus.NewDesc("llmgw_kv_ingest_pending_discarded_total",
		"KV state kept for replicas Consul does not list yet, discarded at a bound (age, replicas, keys); their drivers are asked for a snapshot when they join.", []string{"reason"}, nil)
	descPendingReplicas = prometheus.NewDesc("llmgw_kv_ingest_pending_replicas",
		"Replicas Consul does not list yet whose KV state the router keeps.", nil, nil)
	descPendingKeys = prometheus.NewDesc("llmgw_kv_ingest_pending_keys",
		"Block keys kept for replicas Consul does not list yet.", nil, nil)
)

// collector reads the router's state at scrape time: the core's parts,
// the peer table (nil without peers) and the routers Consul lists (set
// once the publisher starts). It is built from parts that exist already,
// so a scrape never finds one missing.
type collector struct {
	*core
	peerTable     *peers.Table
	routersListed *atomic.Pointer[listedRouters]
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReplica, descInFlight, descWaiting, descKVUsage, descEventsMissing, descDraining, descBlockSize, descBlockSizeMismatch,
		descReplicaBlocks, descReplicaCapacity, descOversized, descIndexKeys, descIndexMax, descIndexRejected,
		descResnapshots, descIngest, descPendingDiscarded, descPendingReplicas, descPendingKeys,
		descPeerInFlight, descPeers, descPeerMessages, descPeersReplaced} {
		ch <- d
	}
	for _, d := range sessionDescs {
		ch <- d
	}
	for _, d := range indexDescs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, r := range s.set.All() {
		mode := s.set.Mode(r.ID)
		healthy := "true"
		if !s.set.Healthy(r.ID) {
			healthy = "false"
		}
		gauge(descReplica, 1, r.ID, r.Model, string(mode), healthy)
		l, peer := s.tracker.Load(r.ID), s.tracker.PeerLoad(r.ID)
		gauge(descInFlight, float64(l.InFlight-peer.InFlight), r.ID)
		gauge(descPeerInFlight, float64(peer.InFlight), r.ID)
		gauge(descWaiting, l.Waiting, r.ID)
		gauge(descKVUsage, l.KVUsage, r.ID)
		missing := 0.0
		if r.KVEvents && mode != "exact" {
			missing = 1
		}
		gauge(descEventsMissing, missing, r.ID)
		gauge(descDraining, b2f(r.Draining), r.ID, r.Health)
		c.collectBlockSize(gauge, r.ID, r.Model)
		c.collectCapacity(gauge, r.ID, r.Model)
		ch <- prometheus.MustNewConstMetric(descResnapshots, prometheus.CounterValue, float64(s.capacity.Repairs(r.ID)), r.ID, r.Model)
	}
	limits := s.capacity.Limits()
	for _, m := range s.set.Models() {
		st := s.models.For(m).Stats()
		gauge(descIndexKeys, float64(st.Keys), m)
		gauge(descIndexMax, float64(limits[m]), m)
		ch <- prometheus.MustNewConstMetric(descIndexRejected, prometheus.CounterValue, float64(st.Rejected), m)
	}
	is := s.sink.Stats()
	for kind, v := range map[string]uint64{"updates": is.Updates, "snapshots": is.Snapshots, "keys": is.Keys, "unknown_replica": is.Unknown,
		"kept": is.Kept, "adopted": is.Adopted, "errors": is.Errors, "refused": is.Refused, "resyncs": is.Resyncs} {
		ch <- prometheus.MustNewConstMetric(descIngest, prometheus.CounterValue, float64(v), kind)
	}
	for _, reason := range []string{ingest.DiscardAge, ingest.DiscardReplicas, ingest.DiscardKeys} {
		ch <- prometheus.MustNewConstMetric(descPendingDiscarded, prometheus.CounterValue, float64(is.Discarded[reason]), reason)
	}
	c.collectIndex(ch)
	gauge(descPendingReplicas, float64(is.Pending))
	gauge(descPendingKeys, float64(is.PendingKeys))
	c.collectSessions(ch)
	if s.peerTable != nil {
		gauge(descPeers, float64(s.peerTable.Peers()))
		st := s.peerTable.Stats()
		for result, v := range map[string]uint64{"accepted": st.Accepted, "rejected": st.Rejected, "stale": st.Stale, "own": st.Own, "unlisted": st.Unlisted} {
			ch <- prometheus.MustNewConstMetric(descPeerMessages, prometheus.CounterValue, float64(v), result)
		}
		ch <- prometheus.MustNewConstMetric(descPeersReplaced, prometheus.CounterValue, float64(st.Replaced))
	}
}

// collectBlockSize exports a replica's block size and whether its engine
// disagrees with what it advertises.
func (c *collector) collectBlockSize(gauge func(*prometheus.Desc, float64, ...string), replica, model string) {
	bs := c.set.BlockSizes(replica)
	source := bs.Source
	if source == "" {
		source = "meta"
	}
	gauge(descBlockSize, float64(bs.Effective()), replica, model, source)
	gauge(descBlockSizeMismatch, b2f(bs.Mismatch() != ""), replica, model)
}

// collectCapacity exports a replica's index share, advertised capacity and
// oversize alarm per tier.
func (c *collector) collectCapacity(gauge func(*prometheus.Desc, float64, ...string), replica, model string) {
	gpu, cpu := c.models.For(model).ReplicaBlocks(replica)
	adv, known := c.capacity.Advertised(replica)
	for t, held := range [2]int{index.GPU: gpu, index.CPU: cpu} {
		tier := index.Tier(t)
		gauge(descReplicaBlocks, float64(held), replica, model, tier.String())
		if known {
			gauge(descReplicaCapacity, float64(adv[tier]), replica, model, tier.String())
			gauge(descOversized, b2f(c.capacity.Oversized(replica, tier)), replica, model, tier.String())
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*collector)(nil)
