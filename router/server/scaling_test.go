package server

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/autoscale"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

// fixedBacklog is a queue holding one backlog for every model.
type fixedBacklog admission.Backlog

func (f fixedBacklog) Backlog(string) admission.Backlog { return admission.Backlog(f) }

// TestScalingCollector: the signal sums a model's load over its replicas,
// draining ones included, counts only those serving, averages their
// prefill rate, and recommends by the larger term; a waiting request
// counts toward the in-flight term.
func TestScalingCollector(t *testing.T) {
	tracker := load.NewTracker(load.WithPrefillRate(1000))
	set := replicas.New(ingest.New(index.NewModels(index.Options{}), ingest.Options{}), tracker, replicas.Options{})
	set.Replace([]replicas.Replica{
		{ID: "a", Model: "m", Address: "127.0.0.1:1", BlockSize: 16, Source: "static"},
		{ID: "b", Model: "m", Address: "127.0.0.1:2", BlockSize: 16, Source: "static", Draining: true},
	})
	var ends []func()
	for _, r := range []struct {
		id       string
		uncached int
	}{{"a", 1500}, {"a", 500}, {"b", 1000}} {
		_, end := tracker.BeginPrefill(r.id, 4000, r.uncached)
		ends = append(ends, end)
	}
	c := &scalingCollector{set: set, tracker: tracker, queue: fixedBacklog{Waiting: 2, Oldest: 1500 * time.Millisecond},
		policy: autoscale.Policy{TTFT: time.Second, InFlight: 2}}
	// 3000 tokens queued at 1000 a second within 1 s: at most 3 replicas
	// (the drain since the requests began can only lower it); 3 in flight
	// and 2 waiting at 2 a replica: 3.
	want := `
# HELP llmgw_model_in_flight Requests in flight to each model's replicas, this router's and its peers'.
# TYPE llmgw_model_in_flight gauge
llmgw_model_in_flight{model="m"} 3
# HELP llmgw_model_queue_oldest_wait_seconds How long the longest-waiting request in this router's queue for each model has waited (0: none waits).
# TYPE llmgw_model_queue_oldest_wait_seconds gauge
llmgw_model_queue_oldest_wait_seconds{model="m"} 1.5
# HELP llmgw_model_queue_waiting Requests this router holds for each model: in its admission queue while every replica is busy, and while the model starts from zero.
# TYPE llmgw_model_queue_waiting gauge
llmgw_model_queue_waiting{model="m"} 2
# HELP llmgw_model_replicas Replicas serving each model: listed and not draining.
# TYPE llmgw_model_replicas gauge
llmgw_model_replicas{model="m"} 1
# HELP llmgw_model_replicas_recommended Replicas each model needs for its demand now: the larger of those that clear its queued prefill within the TTFT target and those that carry its requests at the in-flight target (router/autoscale).
# TYPE llmgw_model_replicas_recommended gauge
llmgw_model_replicas_recommended{model="m"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "llmgw_model_in_flight", "llmgw_model_queue_waiting",
		"llmgw_model_queue_oldest_wait_seconds", "llmgw_model_replicas", "llmgw_model_replicas_recommended"); err != nil {
		t.Error(err)
	}
	for _, end := range ends {
		end()
	}
	c.queue = fixedBacklog{}
	idle := `
# HELP llmgw_model_replicas_recommended Replicas each model needs for its demand now: the larger of those that clear its queued prefill within the TTFT target and those that carry its requests at the in-flight target (router/autoscale).
# TYPE llmgw_model_replicas_recommended gauge
llmgw_model_replicas_recommended{model="m"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(idle), "llmgw_model_replicas_recommended"); err != nil {
		t.Errorf("idle: %v", err)
	}
}

// coldHold is a cold hold with fixed waiters per model.
type coldHold map[string]int

func (c coldHold) Models() []string {
	return slices.Sorted(maps.Keys(c))
}

func (c coldHold) Waiting(model string) int { return c[model] }

// TestScalingCollectorColdModels: a model at zero replicas that scales
// from zero has a signal, and the requests held while it starts are
// demand: 3 held at 2 a replica ask for 2 replicas where none serves;
// with none held it asks for none. A model with replicas adds its held
// requests to its queue.
func TestScalingCollectorColdModels(t *testing.T) {
	tracker := load.NewTracker(load.WithPrefillRate(1000))
	set := replicas.New(ingest.New(index.NewModels(index.Options{}), ingest.Options{}), tracker, replicas.Options{})
	set.Replace([]replicas.Replica{{ID: "a", Model: "m", Address: "127.0.0.1:1", BlockSize: 16, Source: "static"}})
	c := &scalingCollector{set: set, tracker: tracker, queue: fixedBacklog{}, cold: coldHold{"z": 3, "m": 1},
		policy: autoscale.Policy{TTFT: time.Second, InFlight: 2}}
	want := `
# HELP llmgw_model_replicas Replicas serving each model: listed and not draining.
# TYPE llmgw_model_replicas gauge
llmgw_model_replicas{model="m"} 1
llmgw_model_replicas{model="z"} 0
# HELP llmgw_model_replicas_recommended Replicas each model needs for its demand now: the larger of those that clear its queued prefill within the TTFT target and those that carry its requests at the in-flight target (router/autoscale).
# TYPE llmgw_model_replicas_recommended gauge
llmgw_model_replicas_recommended{model="m"} 1
llmgw_model_replicas_recommended{model="z"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "llmgw_model_replicas", "llmgw_model_replicas_recommended"); err != nil {
		t.Error(err)
	}
	c.cold = coldHold{"z": 0}
	idle := `
# HELP llmgw_model_replicas_recommended Replicas each model needs for its demand now: the larger of those that clear its queued prefill within the TTFT target and those that carry its requests at the in-flight target (router/autoscale).
# TYPE llmgw_model_replicas_recommended gauge
llmgw_model_replicas_recommended{model="m"} 0
llmgw_model_replicas_recommended{model="z"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(idle), "llmgw_model_replicas_recommended"); err != nil {
		t.Errorf("nothing held: %v", err)
	}
}
