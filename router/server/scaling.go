package server

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/autoscale"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// The autoscaling signal (router/autoscale), per model: the demand only
// the router sees, and the replica count that serves it. The Nomad
// Autoscaler policies in jobs/ query llmgw_model_replicas_recommended.
var (
	descModelReplicas = prometheus.NewDesc("llmgw_model_replicas",
		"Replicas serving each model: listed and not draining.", []string{"model"}, nil)
	descModelInFlight = prometheus.NewDesc("llmgw_model_in_flight",
		"Requests in flight to each model's replicas, this router's and its peers'.", []string{"model"}, nil)
	descModelPrefill = prometheus.NewDesc("llmgw_model_prefill_tokens",
		"Prompt tokens each model's replicas still have to prefill after the cache hits the routers predicted: the uncached prefill queued on them.", []string{"model"}, nil)
	descModelPrefillRate = prometheus.NewDesc("llmgw_model_prefill_rate",
		"Prompt tokens a second one of each model's replicas prefills: the mean of the rates measured on them, the prior until one is.", []string{"model"}, nil)
	descModelWaiting = prometheus.NewDesc("llmgw_model_queue_waiting",
		"Requests this router holds for each model: in its admission queue while every replica is busy, and while the model starts from zero.", []string{"model"}, nil)
	descModelOldestWait = prometheus.NewDesc("llmgw_model_queue_oldest_wait_seconds",
		"How long the longest-waiting request in this router's queue for each model has waited (0: none waits).", []string{"model"}, nil)
	descModelRecommended = prometheus.NewDesc("llmgw_model_replicas_recommended",
		"Replicas each model needs for its demand now: the larger of those that clear its queued prefill within the TTFT target and those that carry its requests at the in-flight target (router/autoscale).", []string{"model"}, nil)
	descModelNeeded = prometheus.NewDesc("llmgw_model_replicas_needed",
		"The replicas each of the recommendation's terms asks for: by prefill (queued prefill against the TTFT target) and by in_flight (requests against the in-flight target).", []string{"model", "by"}, nil)
)

// backlogs is the admission queue as the signal reads it (route.Planner).
type backlogs interface {
	Backlog(model string) admission.Backlog
}

// coldWaiters is the hold of models at zero replicas (admission.Cold) as
// the signal reads it: a model listed there has a signal even with no
// replica, and the requests it holds are demand.
type coldWaiters interface {
	Models() []string
	Waiting(model string) int
}

// scalingCollector computes the signal at scrape time from the replica set,
// the load tracker, the admission queue and, when models scale from zero,
// their cold hold.
type scalingCollector struct {
	set     *replicas.Set
	tracker *load.Tracker
	queue   backlogs
	cold    coldWaiters // nil: no model scales from zero
	policy  autoscale.Policy
}

// models lists the models with replicas, then those at zero the cold hold
// knows, each once.
func (c *scalingCollector) models() []string {
	ms := c.set.Models()
	if c.cold == nil {
		return ms
	}
	for _, m := range c.cold.Models() {
		if !slices.Contains(ms, m) {
			ms = append(ms, m)
		}
	}
	return ms
}

func (c *scalingCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descModelReplicas, descModelInFlight, descModelPrefill, descModelPrefillRate,
		descModelWaiting, descModelOldestWait, descModelRecommended, descModelNeeded} {
		ch <- d
	}
}

func (c *scalingCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, m := range c.models() {
		d, serving := c.demand(m)
		b := c.queue.Backlog(m)
		d.Waiting = b.Waiting
		if c.cold != nil {
			// A request held for a cold model waits as one queued does.
			b.Waiting += c.cold.Waiting(m)
			d.Waiting = b.Waiting
		}
		r := c.policy.Recommend(d)
		gauge(descModelReplicas, float64(serving), m)
		gauge(descModelInFlight, float64(d.InFlight), m)
		gauge(descModelPrefill, float64(d.PrefillTokens), m)
		gauge(descModelPrefillRate, d.PrefillRate, m)
		gauge(descModelWaiting, float64(b.Waiting), m)
		gauge(descModelOldestWait, b.Oldest.Seconds(), m)
		gauge(descModelRecommended, float64(r.Replicas), m)
		gauge(descModelNeeded, float64(r.ByPrefill), m, "prefill")
		gauge(descModelNeeded, float64(r.ByInFlight), m, "in_flight")
	}
}

// demand sums model's load over its replicas, draining ones included (their
// requests still occupy them), and averages the prefill rate over those
// serving, which it counts.
func (c *scalingCollector) demand(model string) (d autoscale.Demand, serving int) {
	var rates float64
	for _, r := range c.set.ForModel(model) {
		l := c.tracker.Load(r.ID)
		d.InFlight += l.InFlight
		d.PrefillTokens += l.PrefillTokens
		if !r.Draining {
			serving++
			rates += c.tracker.PrefillRate(r.ID)
		}
	}
	if serving > 0 {
		d.PrefillRate = rates / float64(serving)
	}
	return d, serving
}

var _ prometheus.Collector = (*scalingCollector)(nil)
