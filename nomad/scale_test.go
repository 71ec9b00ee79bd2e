package nomad

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/nomad/nomadtest"
)

func standinScaler(t *testing.T) (*nomadtest.Server, *Scaler) {
	t.Helper()
	s := nomadtest.New("tok")
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := NewClient(Config{Address: s.Addr(), Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return s, NewScaler(c)
}

// TestScalerStartsOnceAcrossCallers: many callers, each with its own
// client as separate routers have, start a group at zero at once, every
// one reading the job before any scale reaches the stand-in; the count
// changes once, to the start count, only one caller reports the change,
// and none an error. The job's status moved after its spec (so its
// ModifyIndex is past its JobModifyIndex), as on a running cluster.
func TestScalerStartsOnceAcrossCallers(t *testing.T) {
	const callers = 8
	s := nomadtest.New("")
	s.AddJob("", "m1", []string{"shard"}, 0)
	s.SetHealthy("", "m1", "shard", 0)
	var changes atomic.Int32
	s.OnScale(func(ns, job, group string, _, to int) {
		changes.Add(1)
		s.SetHealthy(ns, job, group, to) // no deployment to block the others: only the index does
	})
	// Hold every scale until each caller has read the job: all of them
	// then enforce the same index.
	var reads atomic.Int32
	allRead := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/job/m1":
			s.ServeHTTP(w, r)
			if reads.Add(1) == callers {
				close(allRead)
			}
			return
		case r.URL.Path == "/v1/job/m1/scale":
			<-allRead
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	var wg sync.WaitGroup
	won := make(chan bool, callers)
	for range callers {
		c, err := NewClient(Config{Address: ts.URL})
		if err != nil {
			t.Fatal(err)
		}
		sc := NewScaler(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			changed, err := sc.Start(context.Background(), Group{"m1", "shard"}, 2, "llmgw: a request for m1")
			if err != nil {
				t.Error(err)
			}
			won <- changed
		}()
	}
	wg.Wait()
	close(won)
	var winners int
	for w := range won {
		if w {
			winners++
		}
	}
	if winners != 1 || changes.Load() != 1 || s.Count("", "m1", "shard") != 2 || s.Calls().Scale != callers {
		t.Fatalf("%d callers changed the count, %d changes, count %d, %d scale calls; want 1, 1, 2, %d",
			winners, changes.Load(), s.Count("", "m1", "shard"), s.Calls().Scale, callers)
	}
}

// TestScalerStopAndRefusals: Stop moves a group to zero once, but not
// within its window after a start; Start and Stop leave a group alone
// that is already where they would move it; unknown jobs and groups are
// errors.
func TestScalerStopAndRefusals(t *testing.T) {
	s, sc := standinScaler(t)
	ctx := context.Background()
	s.AddJob("", "m1", []string{"shard"}, 1)
	g := Group{"m1", "shard"}
	if changed, err := sc.Start(ctx, g, 1, "warm already"); err != nil || changed {
		t.Fatalf("start at 1: %v %v; want no change", changed, err)
	}
	if changed, err := sc.Stop(ctx, g, "idle", 0); err != nil || !changed || s.Count("", "m1", "shard") != 0 {
		t.Fatalf("stop: %v %v, count %d", changed, err, s.Count("", "m1", "shard"))
	}
	if changed, err := sc.Stop(ctx, g, "idle", 0); err != nil || changed {
		t.Fatalf("stop at 0: %v %v; want no change", changed, err)
	}
	if n, err := sc.Count(ctx, g); err != nil || n != 0 {
		t.Fatalf("count %d %v", n, err)
	}
	// A start within the window keeps the group up: another router's
	// requests may wait for it.
	if changed, err := sc.Start(ctx, g, 1, "a request"); err != nil || !changed {
		t.Fatalf("start: %v %v", changed, err)
	}
	s.SetHealthy("", "m1", "shard", 1)
	if changed, err := sc.Stop(ctx, g, "idle", time.Hour); err != nil || changed || s.Count("", "m1", "shard") != 1 {
		t.Fatalf("stop within an hour of a start: %v %v, count %d; want no change", changed, err, s.Count("", "m1", "shard"))
	}
	if changed, err := sc.Stop(ctx, g, "idle", time.Nanosecond); err != nil || !changed || s.Count("", "m1", "shard") != 0 {
		t.Fatalf("stop past the window: %v %v, count %d; want a change to 0", changed, err, s.Count("", "m1", "shard"))
	}
	for _, bad := range []Group{{"nope", "shard"}, {"m1", "nope"}} {
		if _, err := sc.Start(ctx, bad, 1, ""); err == nil {
			t.Errorf("start %s: no error", bad)
		}
	}
}
