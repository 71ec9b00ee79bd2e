package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/index"
)

// The index's bounds, visible: holders per model against index.MaxHolders,
// and the replicas whose state the index had no room for (approx mode).
var (
	descIndexHolders = prometheus.NewDesc("llmgw_index_holders",
		"Live (replica, rank) holders in each model's index.", []string{"model"}, nil)
	descIndexMaxHolders = prometheus.NewDesc("llmgw_index_max_holders",
		"Holders one model's index can take (a replica beyond it is refused and routes in approx mode).", nil, nil)
	descIndexUnswept = prometheus.NewDesc("llmgw_index_unswept_entries",
		"Entries of removed holders not yet swept from each model's index (unseen by lookups; swept at a sixteenth of the live ones).", []string{"model"}, nil)
	descReplicaRefused = prometheus.NewDesc("llmgw_replica_kv_refused",
		"1 for each replica whose KV state its model's index had no room for: it routes in approx mode until room frees and its driver resends a snapshot (alarm).", []string{"replica", "model"}, nil)
	descReplicaUntrusted = prometheus.NewDesc("llmgw_replica_kv_untrusted",
		"1 for each replica whose driver cannot key its blocks (its engine's KV events lack a field some keys depend on; the reason is in /admin/replicas): it routes in approx mode until its engine is upgraded.", []string{"replica", "model"}, nil)
)

var indexDescs = []*prometheus.Desc{descIndexHolders, descIndexMaxHolders, descIndexUnswept, descReplicaRefused, descReplicaUntrusted}

// collectIndex sends the index bounds' metrics.
func (c *collector) collectIndex(ch chan<- prometheus.Metric) {
	s := c
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descIndexMaxHolders, index.MaxHolders)
	for _, m := range s.set.Models() {
		st := s.models.For(m).Stats()
		gauge(descIndexHolders, float64(st.Holders), m)
		gauge(descIndexUnswept, float64(st.Unswept), m)
	}
	for _, r := range s.set.All() {
		if _, refused := s.sink.Refused(r.ID); refused {
			gauge(descReplicaRefused, 1, r.ID, r.Model)
		}
		if _, untrusted := s.sink.Untrusted(r.ID); untrusted {
			gauge(descReplicaUntrusted, 1, r.ID, r.Model)
		}
	}
}
