package nomad

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

// fakeNomad is a Nomad API on a simulated clock: a blocking service query
// at the current index takes its whole wait (no registration changes),
// and it counts the calls of each kind.
type fakeNomad struct {
	clock    time.Time
	regs     []*api.ServiceRegistration
	queries  int
	reads    map[string]int // checks reads per allocation
	failures map[string]bool
}

func newFakeNomad(allocs int) *fakeNomad {
	f := &fakeNomad{clock: time.Unix(1e9, 0), reads: map[string]int{}, failures: map[string]bool{}}
	for i := range allocs {
		id := fmt.Sprintf("alloc-%04d", i)
		f.regs = append(f.regs, &api.ServiceRegistration{ID: "svc-" + id, ServiceName: "vllm", AllocID: id, Tags: []string{"llmgw"}})
	}
	return f
}

func (f *fakeNomad) now() time.Time { return f.clock }

func (f *fakeNomad) Get(_ string, q *api.QueryOptions) ([]*api.ServiceRegistration, *api.QueryMeta, error) {
	f.queries++
	if q.WaitIndex >= 7 {
		f.clock = f.clock.Add(q.WaitTime)
	}
	return f.regs, &api.QueryMeta{LastIndex: 7}, nil
}

func (f *fakeNomad) Checks(alloc string, _ *api.QueryOptions) (api.AllocCheckStatuses, error) {
	f.reads[alloc]++
	if f.failures[alloc] {
		return nil, fmt.Errorf("no route to the client")
	}
	return api.AllocCheckStatuses{"c": {Service: "vllm", Mode: ModeHealthiness, Status: CheckSuccess}}, nil
}

// simulate runs one watcher's queries over d of simulated time with the
// default options, as the watcher's loop calls them.
func (f *fakeNomad) simulate(t *testing.T, d time.Duration) {
	t.Helper()
	r := &registrations{services: f, query: Query{Service: "vllm", Tag: "llmgw"}, log: hclog.NewNullLogger(),
		gap: defaultMinInterval, now: f.now,
		pause:  func(_ context.Context, d time.Duration) bool { f.clock = f.clock.Add(d); return true },
		health: newHealthCache(f, defaultHealthRate, defaultWaitTime, f.now)}
	end := f.clock.Add(d)
	var index uint64
	for f.clock.Before(end) {
		_, next, err := r.Query(context.Background(), index, defaultWaitTime)
		if err != nil {
			t.Fatal(err)
		}
		index = next
	}
}

// TestDiscoveryCallsBounded pins the calls one watcher makes with the
// default options over ten simulated minutes without registration
// changes: one service query per wait (5 s), every allocation's checks
// read once at the start, then at most defaultHealthRate (20) reads per
// second, whatever the fleet's size. A fleet of up to 100 allocations is
// read whole every wait; 1,000 are each read every 50 s.
func TestDiscoveryCallsBounded(t *testing.T) {
	const minutes = 10
	span := minutes * time.Minute
	for _, tc := range []struct {
		allocs           int
		minReads         int // per allocation, over the span
		maxReadsPerAlloc int
	}{
		{allocs: 64, minReads: 120, maxReadsPerAlloc: 121},
		{allocs: 100, minReads: 120, maxReadsPerAlloc: 121},
		{allocs: 1000, minReads: 12, maxReadsPerAlloc: 13},
		{allocs: 4000, minReads: 3, maxReadsPerAlloc: 4},
	} {
		t.Run(fmt.Sprintf("allocs=%d", tc.allocs), func(t *testing.T) {
			f := newFakeNomad(tc.allocs)
			f.simulate(t, span)
			if max := int(span/defaultWaitTime) + 1; f.queries > max {
				t.Errorf("%d service queries; want at most %d (one per wait)", f.queries, max)
			}
			total := 0
			for _, n := range f.reads {
				total += n
			}
			if max := tc.allocs + int(defaultHealthRate*span.Seconds()); total > max {
				t.Errorf("%d checks reads; want at most %d (each allocation once, then %d/s)", total, max, defaultHealthRate)
			}
			for i := range tc.allocs {
				id := fmt.Sprintf("alloc-%04d", i)
				if n := f.reads[id]; n < tc.minReads || n > tc.maxReadsPerAlloc {
					t.Fatalf("%s read %d times in %d minutes; want %d to %d", id, n, minutes, tc.minReads, tc.maxReadsPerAlloc)
				}
			}
		})
	}
}

// TestQueriesPacedWhileRegistrationsChange: when every service query
// answers at once (registrations change all the time), the watcher still
// queries at most once per MinInterval.
func TestQueriesPacedWhileRegistrationsChange(t *testing.T) {
	f := newFakeNomad(10)
	r := &registrations{services: churning{f}, query: Query{Service: "vllm"}, log: hclog.NewNullLogger(),
		gap: defaultMinInterval, now: f.now,
		pause:  func(_ context.Context, d time.Duration) bool { f.clock = f.clock.Add(d); return true },
		health: newHealthCache(f, defaultHealthRate, defaultWaitTime, f.now)}
	end := f.clock.Add(time.Minute)
	var index uint64
	for f.clock.Before(end) {
		_, next, err := r.Query(context.Background(), index, defaultWaitTime)
		if err != nil {
			t.Fatal(err)
		}
		index = next
	}
	if f.queries < 59 || f.queries > 61 {
		t.Errorf("%d queries in a minute of constant change; want one a second", f.queries)
	}
}

// churning is a fakeNomad whose index moves before every query, so a
// blocking query answers at once.
type churning struct{ *fakeNomad }

func (c churning) Get(service string, q *api.QueryOptions) ([]*api.ServiceRegistration, *api.QueryMeta, error) {
	c.queries++
	return c.regs, &api.QueryMeta{LastIndex: uint64(c.queries)}, nil
}

// TestHealthOfNewAndFailedAllocations: a new allocation is read at once
// even with the bucket empty; one whose read failed is critical and read
// again once stale; one no longer registered is forgotten.
func TestHealthOfNewAndFailedAllocations(t *testing.T) {
	f := newFakeNomad(3)
	f.failures["alloc-0001"] = true
	h := newHealthCache(f, 1, defaultWaitTime, f.now)
	q := Query{Service: "vllm"}
	health := func() map[string]string {
		out, _, _, err := fetch(context.Background(), f, h, q, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, in := range out {
			m[in.ServiceID] = in.Health
		}
		return m
	}
	got := health()
	if got["svc-alloc-0000"] != "passing" || got["svc-alloc-0001"] != "critical" || len(f.reads) != 3 {
		t.Fatalf("first fetch: health %v, reads %v", got, f.reads)
	}
	f.regs = append(f.regs, &api.ServiceRegistration{ID: "svc-alloc-0003", ServiceName: "vllm", AllocID: "alloc-0003"})
	f.failures["alloc-0001"] = false
	if got := health(); got["svc-alloc-0003"] != "passing" || f.reads["alloc-0003"] != 1 || f.reads["alloc-0001"] != 1 {
		t.Fatalf("a new allocation: health %v, reads %v; want it read at once, the others not yet", got, f.reads)
	}
	f.clock = f.clock.Add(defaultWaitTime)
	if got := health(); got["svc-alloc-0001"] != "passing" {
		t.Errorf("after a wait: health %v, reads %v; want the failed allocation read again", got, f.reads)
	}
	f.regs = f.regs[:1]
	health()
	if len(h.allocs) != 1 || h.get("alloc-0000") == nil {
		t.Errorf("cache holds %d allocations after three left; want alloc-0000 only", len(h.allocs))
	}
}
