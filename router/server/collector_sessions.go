package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The liveness of what feeds the router: driver sessions on the ingest
// listener, and the routers Consul lists next to the peers that report.
var (
	descDriverSessions = prometheus.NewDesc("llmgw_kv_driver_sessions",
		"Driver sessions whose KV updates the router follows.", nil, nil)
	descDriverSilence = prometheus.NewDesc("llmgw_kv_driver_silence_seconds",
		"Seconds since each driver session's last update; drivers send at least every 10 s keep-alive, and a session silent for driver_expiry is dropped.", []string{"driver"}, nil)
	descDriverExpired = prometheus.NewDesc("llmgw_kv_driver_sessions_expired_total",
		"Driver sessions dropped because the driver was silent for driver_expiry (its replicas' KV state went with them; alarm).", nil, nil)
	descRoutersListed = prometheus.NewDesc("llmgw_peer_routers_listed",
		"Router instances Consul lists (this one included) while peer load sharing runs; llmgw_peer_routers counts those that report.", nil, nil)
)

var sessionDescs = []*prometheus.Desc{descDriverSessions, descDriverSilence, descDriverExpired, descRoutersListed}

// collectSessions sends the driver-session and router-listing metrics.
func (c *collector) collectSessions(ch chan<- prometheus.Metric) {
	s := c
	if s.receiver != nil {
		now := time.Now()
		sessions := s.receiver.Sessions()
		ch <- prometheus.MustNewConstMetric(descDriverSessions, prometheus.GaugeValue, float64(len(sessions)))
		for _, d := range sessions {
			ch <- prometheus.MustNewConstMetric(descDriverSilence, prometheus.GaugeValue, now.Sub(d.LastSeen).Seconds(), d.Driver)
		}
		ch <- prometheus.MustNewConstMetric(descDriverExpired, prometheus.CounterValue, float64(s.receiver.Expired()))
	}
	if w := s.routersListed.Load(); w != nil {
		rs, _ := w.Current()
		ch <- prometheus.MustNewConstMetric(descRoutersListed, prometheus.GaugeValue, float64(len(rs)))
	}
}
