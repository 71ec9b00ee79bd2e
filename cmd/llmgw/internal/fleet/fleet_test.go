package fleet

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// TestFleet runs the whole chain once and goes through every operation in
// turn, then checks that Close leaves no process and no goroutine behind.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and routers")
	}
	o := options(t)
	ctx := context.Background()
	f, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			f.Close()
		}
	}()

	if f.WorkDir() != o.WorkDir {
		t.Errorf("WorkDir() = %q; want %q", f.WorkDir(), o.WorkDir)
	}
	shards := f.Shards()
	ids := map[string]bool{}
	for _, s := range shards {
		ids[s.ReplicaID] = true
	}
	if len(shards) != 3 || len(ids) != 3 || len(f.RouterURLs()) != 2 {
		t.Fatalf("shards %v, routers %v; want 3 distinct shards and 2 routers", shards, f.RouterURLs())
	}

	// The leak check at the end must see what runs now: Consul, the
	// plugin, two routers, and a supervisor and an engine per shard.
	if running := fleettest.Leftovers(o.WorkDir); len(running) < 10 {
		t.Fatalf("the process scan finds %d processes of the running fleet; want at least 10:\n%s", len(running), strings.Join(running, "\n"))
	}

	t.Run("each router routes to a shard, all shards exact", func(t *testing.T) {
		for i, url := range f.RouterURLs() {
			v := view(t, f, url)
			for id := range ids {
				if v[id].Mode != "exact" || v[id].GPUBlocks != 0 {
					t.Errorf("router %d sees %s as %+v; want exact and empty after Start", i, id, v[id])
				}
			}
			a := complete(t, url, prompt(i))
			if a.code != 200 || !ids[a.replica] || a.mode != "exact" {
				t.Errorf("router %d: %d from %q (%s) %s; want 200 from a shard, exact", i, a.code, a.replica, a.mode, a.body)
			}
		}
	})

	t.Run("restarted routers get a snapshot, shards keep running", func(t *testing.T) {
		home := complete(t, f.RouterURLs()[0], prompt(100)).replica
		waitFor(t, "both routers to index the prompt's blocks", func() bool {
			for _, url := range f.RouterURLs() {
				if view(t, f, url)[home].GPUBlocks == 0 {
					return false
				}
			}
			return true
		})
		pids := enginePids(f)
		old := f.RouterURLs()
		loadOnly := "filter \"model\" {}\nscorer \"load\" {\n  weight = 1\n}\npicker \"max-score\" {}"
		if err := f.RestartRouters(ctx, loadOnly, ""); err != nil {
			t.Fatal(err)
		}
		now := f.RouterURLs()
		if len(now) != 2 || slices.ContainsFunc(now, func(u string) bool { return slices.Contains(old, u) }) {
			t.Fatalf("routers %v after restart; want 2 new ones (old %v)", now, old)
		}
		for _, url := range now {
			// No request since the restart: the blocks come from the
			// driver's snapshot.
			if v := view(t, f, url)[home]; v.Mode != "exact" || v.GPUBlocks == 0 {
				t.Errorf("new router %s sees %s as %+v; want exact with its blocks", url, home, v)
			}
			if got := scorers(t, f.AdminURL(url)); !slices.Equal(got, []string{"load"}) {
				t.Errorf("new router %s scores with %v; want the new scheduler's [load]", url, got)
			}
		}
		if after := enginePids(f); !slices.Equal(after, pids) || slices.ContainsFunc(after, func(p int) bool { return !alive(p) }) {
			t.Errorf("engine pids %v after the restart; want the same running %v", after, pids)
		}
	})

	t.Run("stop means empty: the driver clears a stopped shard", func(t *testing.T) {
		s := f.shards[1]
		if err := f.post(ctx, s.url+"/v1/completions", `{"model":"sim-model","prompt":"`+strings.Repeat("fill a few blocks ", 24)+`","max_tokens":1}`); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "routers to index the shard's blocks", func() bool { return allRouters(t, f, s.replica, holds) })
		// Hold the Consul side steady (a TTL check marked passing), so
		// only the driver's update can empty the routers' index.
		a := f.consul.client.Agent()
		err := a.CheckRegister(&api.AgentCheckRegistration{ID: "held", Name: "held", ServiceID: s.serviceID,
			AgentServiceCheck: api.AgentServiceCheck{TTL: "1h", Status: api.HealthPassing}})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.CheckDeregister("service:" + s.serviceID); err != nil {
			t.Fatal(err)
		}
		pid := s.enginePid
		if _, err := f.takeShard(1); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := f.stopTask(ctx, s); err != nil {
			t.Fatal(err)
		}
		stopped := time.Since(start)
		emptied := waitFor(t, "routers to hold nothing for the stopped shard", func() bool {
			return allRouters(t, f, s.replica, func(v replicaView, listed bool) bool { return listed && v.GPUBlocks == 0 && v.CPUBlocks == 0 })
		})
		t.Logf("StopTask returned after %s; routers held nothing %s later (flush interval 250ms)", stopped, emptied)
		if alive(pid) {
			t.Errorf("engine %d still runs after StopTask", pid)
		}
		if err := f.deregister(ctx, s); err != nil {
			t.Fatal(err)
		}
		gone := waitFor(t, "routers to drop the deregistered shard", func() bool { return allRouters(t, f, s.replica, unlisted) })
		t.Logf("deregistration left the routers' replica sets %s later", gone)
		checkNoRequestReaches(t, f, s.replica)
	})

	t.Run("StopShard removes a shard from routing", func(t *testing.T) {
		s := f.shards[2]
		pid := s.enginePid
		start := time.Now()
		if err := f.StopShard(ctx, 2); err != nil {
			t.Fatal(err)
		}
		returned := time.Since(start)
		waitFor(t, "routers to drop the stopped shard", func() bool { return allRouters(t, f, s.replica, unlisted) })
		t.Logf("StopShard returned after %s; no router lists the shard %s after the call", returned, time.Since(start))
		if alive(pid) {
			t.Errorf("engine %d still runs after StopShard", pid)
		}
		if got := f.Shards(); len(got) != 1 || got[0].ReplicaID == s.replica {
			t.Errorf("Shards() = %v; want only shard 0", got)
		}
		if err := f.StopShard(ctx, 2); err == nil {
			t.Error("StopShard twice: no error")
		}
		checkNoRequestReaches(t, f, s.replica)
	})

	t.Run("ResetCaches empties every index", func(t *testing.T) {
		live := f.shards[0].replica
		complete(t, f.RouterURLs()[0], prompt(200))
		waitFor(t, "routers to index the shard's blocks", func() bool { return allRouters(t, f, live, holds) })
		if err := f.ResetCaches(ctx); err != nil {
			t.Fatal(err)
		}
		for _, url := range f.RouterURLs() {
			if v := view(t, f, url)[live]; v.Mode != "exact" || v.GPUBlocks+v.CPUBlocks != 0 {
				t.Errorf("router %s sees %s as %+v after ResetCaches; want exact and empty", url, live, v)
			}
		}
	})

	t.Run("a router config the router refuses fails RestartRouters", func(t *testing.T) {
		err := f.RestartRouters(ctx, "scorer \"no-such-scorer\" {}\npicker \"max-score\" {}", "")
		if err == nil || !strings.Contains(err.Error(), "no-such-scorer") {
			t.Fatalf("RestartRouters with an unknown scorer: %v; want the router's complaint naming it", err)
		}
		if got := f.RouterURLs(); len(got) != 0 {
			t.Errorf("RouterURLs() = %v after the failed restart; want none", got)
		}
		if err := f.RestartRouters(ctx, "", ""); err != nil {
			t.Fatal(err)
		}
		if got := f.RouterURLs(); len(got) != 2 {
			t.Errorf("RouterURLs() = %v; want 2 routers again", got)
		}
	})

	t.Run("a killed router leaves Consul DNS, the other serves on", func(t *testing.T) {
		routers := f.RouterURLs()
		if len(routers) != 2 {
			t.Fatalf("routers %v; want 2 to kill one", routers)
		}
		killed, survivor := f.routers[0], f.routers[1]
		if err := f.KillRouter(0); err != nil {
			t.Fatal(err)
		}
		if got := f.RouterURLs(); !slices.Equal(got, routers[1:]) {
			t.Errorf("RouterURLs() = %v after the kill; want %v", got, routers[1:])
		}
		for i := range 5 {
			if a := complete(t, survivor.url, prompt(300+i)); a.code != 200 {
				t.Errorf("surviving router: %d %s", a.code, a.body)
			}
		}
		critical := waitFor(t, "the killed router's check to turn critical", func() bool {
			checks, _, err := f.consul.client.Health().Checks("llmgw-router", nil)
			if err != nil {
				return false
			}
			for _, c := range checks {
				if c.ServiceID == killed.serviceID {
					return c.Status == api.HealthCritical
				}
			}
			return false
		})
		t.Logf("the killed router's check was critical %s after SIGKILL", critical)
		res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, f.ConsulDNSAddr())
		}}
		_, srvs, err := res.LookupSRV(ctx, "", "", "llmgw-router.service.consul")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range srvs {
			got = append(got, "http://127.0.0.1:"+strconv.Itoa(int(s.Port)))
		}
		if !slices.Equal(got, []string{survivor.url}) {
			t.Errorf("llmgw-router.service.consul SRV: %v; want only %s", got, survivor.url)
		}
		if err := f.KillRouter(7); err == nil {
			t.Error("KillRouter(7): no error")
		}
	})

	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true
	fleettest.CheckNone(t, o.WorkDir)
	goleak.VerifyNone(t)
}

func enginePids(f *Fleet) []int {
	var out []int
	for _, s := range f.runningShards() {
		out = append(out, s.enginePid)
	}
	return out
}

func holds(v replicaView, listed bool) bool { return listed && v.Mode == "exact" && v.GPUBlocks > 0 }

func unlisted(_ replicaView, listed bool) bool { return !listed }

// allRouters reports whether ok holds for every live router's view of replica.
func allRouters(t *testing.T, f *Fleet, replica string, ok func(replicaView, bool) bool) bool {
	t.Helper()
	for _, url := range f.RouterURLs() {
		views, err := f.replicas(context.Background(), url)
		if err != nil {
			return false
		}
		v, listed := views[replica]
		if !ok(v, listed) {
			return false
		}
	}
	return true
}

// checkNoRequestReaches sends requests through every router and wants each
// answered by another replica.
func checkNoRequestReaches(t *testing.T, f *Fleet, replica string) {
	t.Helper()
	for _, url := range f.RouterURLs() {
		for i := range 6 {
			if a := complete(t, url, prompt(1000+i)); a.code != 200 || a.replica == replica {
				t.Errorf("request %d through %s: %d from %q; want 200 from another shard", i, url, a.code, a.replica)
			}
		}
	}
}

// scorers asks a router's admin listener (url) to explain a decision and
// returns its scorers.
func scorers(t *testing.T, url string) []string {
	t.Helper()
	resp, err := testClient.Post(url+"/admin/explain/completions", "application/json",
		strings.NewReader(`{"model":"sim-model","prompt":"hello there","max_tokens":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Chosen struct {
			Scores map[string]float64 `json:"scores"`
		} `json:"chosen"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	var out []string
	for name := range e.Chosen.Scores {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
