package fleet

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/internal/localproc/netport"
)

// TestShardOnATakenPortStartsAgain: a shard handed a port that another
// process holds by the time its engine binds it (the race between the
// fleet's port choice and the driver's) is started again on new ports,
// and the fleet comes up serving on them.
func TestShardOnATakenPortStartsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, a vllm-sim shard and a router")
	}
	taken := holdPort(t)
	var calls int
	shardPorts = firstTaken(taken, &calls)
	defer func() { shardPorts = netport.FreeTCPs }()

	o := options(t)
	o.Shards, o.Routers = 1, 1
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start with the first shard's port taken: %v", err)
	}
	defer f.Close()
	if calls != 2 {
		t.Errorf("ports chosen %d times; want 2 (the taken port, then new ones)", calls)
	}
	shards := f.runningShards()
	if len(shards) != 1 {
		t.Fatalf("%d shards run; want 1", len(shards))
	}
	if shards[0].port == taken {
		t.Fatalf("the shard serves on the taken port %d", taken)
	}
	resp, err := http.Get(shards[0].url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models on the restarted shard: %s", resp.Status)
	}
	if got := complete(t, f.RouterURLs()[0], "hello there").code; got != http.StatusOK {
		t.Errorf("completion through the router: status %d", got)
	}
}

// TestConsulOnATakenPortStartsAgain: a Consul agent handed a port that
// another process holds exits with "address already in use" and is
// started again on new ports.
func TestConsulOnATakenPortStartsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Consul agent")
	}
	bin := os.Getenv("LLMGW_CONSUL_BIN")
	if bin == "" {
		t.Skip("LLMGW_CONSUL_BIN is not set (make test sets it)")
	}
	taken := holdPort(t)
	var calls int
	consulPorts = firstTaken(taken, &calls) // the first port is the HTTP port
	defer func() { consulPorts = netport.FreeTCPs }()
	a, err := startConsul(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatalf("start with the HTTP port taken: %v", err)
	}
	defer a.stop()
	if calls != 2 {
		t.Errorf("ports chosen %d times; want 2 (the taken port, then new ones)", calls)
	}
	if a.httpAddr == net.JoinHostPort("127.0.0.1", strconv.Itoa(taken)) {
		t.Fatalf("the agent serves on the taken port %d", taken)
	}
	if leader, err := a.client.Status().Leader(); err != nil || leader == "" {
		t.Errorf("leader %q, %v; want the restarted agent elected", leader, err)
	}
}

// holdPort listens on a free loopback port until the test ends and
// returns it: a port another process holds.
func holdPort(t *testing.T) int {
	t.Helper()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	return held.Addr().(*net.TCPAddr).Port
}

// firstTaken chooses free ports as netport does, but the first port of
// the first choice is taken; calls counts the choices.
func firstTaken(taken int, calls *int) func(n int) ([]int, error) {
	return func(n int) ([]int, error) {
		*calls++
		ports, err := netport.FreeTCPs(n)
		if err == nil && *calls == 1 {
			ports[0] = taken
		}
		return ports, err
	}
}
