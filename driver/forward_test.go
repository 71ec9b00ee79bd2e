package driver_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/nomad/nomadtest"
)

// TestForwardToRouters runs the whole KV path with a real Consul agent: a
// router stand-in (kvwire's Receiver into a Mirror) registers in Consul,
// the plugin finds it there and forwards the shard's block state, which
// must equal the engine's ground truth; stopping the shard empties it
// (docs/ARCHITECTURE.md, behaviour 5). With discovery = "nomad" the
// router is found in the Nomad stand-in's service catalogue instead.
func TestForwardToRouters(t *testing.T) {
	for _, discovery := range []string{"consul", "nomad"} {
		t.Run(discovery, func(t *testing.T) { forwardToRouters(t, discovery) })
	}
}

func forwardToRouters(t *testing.T, discovery string) {
	const token = "test-ingest-token"
	mirror := kvwire.NewMirror()
	recv, err := kvwire.NewReceiver(token, mirror)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(kvwire.Path, recv)
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	router := httptest.NewServer(mux)
	defer router.Close()
	port := router.Listener.Addr().(*net.TCPAddr).Port
	cfg := map[string]any{"engine": simBin, "ingest_token": token, "kv_flush_interval": "50ms"}
	if discovery == "nomad" {
		catalogue := nomadtest.New("nomad-acl-token")
		if err := catalogue.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		defer catalogue.Close()
		catalogue.Register(nomadapi.ServiceRegistration{ID: "_nomad-task-r-router", ServiceName: consul.RouterService, NodeID: "n1", AllocID: "r",
			Address: "127.0.0.1", Port: port, Tags: []string{consul.MetaIngestPort + "=" + strconv.Itoa(port)}})
		cfg["discovery"], cfg["nomad_address"], cfg["nomad_token"] = "nomad", catalogue.Addr(), "nomad-acl-token"
	} else {
		agent := consultest.Start(t)
		reg, err := consul.Register(context.Background(), agent.Client, consul.RouterRegistration("router-1", "127.0.0.1", port, port))
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Deregister(context.Background())
		cfg["consul_address"] = agent.Addr
	}

	h := launch(t, simBin)
	if err := h.SetConfig(ctx(t), cfg, nomadRange(0, 0)); err != nil {
		t.Fatal(err)
	}
	ev := watchEvents(t, h)
	task := newTask(t, h, map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}})
	id := task.Config.GetId()
	start(t, h, task.Config)
	ev.next(t, "model ready")
	url := engineURL(task)
	complete(t, url, strings.Repeat("one two three four five six ", 10))

	host, _ := os.Hostname()
	replica := task.Config.GetAllocId() + "/" + task.Config.GetName()
	routerView := func() (int, uint64) {
		var sum uint64
		blocks := mirror.Blocks(host, replica)
		for _, b := range blocks {
			sum += b.Key
		}
		return len(blocks), sum
	}
	// First the driver's own view (see waitInSync), then the router's.
	waitInSync(t, func() map[string]string { return inspect(t, h, id).GetDriver().GetAttributes() }, url)
	poll.Until(t, "the router to hold the engine's blocks", func() bool {
		gn, gs := truth(t, url)
		rn, rs := routerView()
		return gn > 0 && gn == rn && gs == rs
	})

	stop(t, h, id)
	poll.Until(t, "the router to hold nothing for the stopped replica", func() bool {
		n, _ := routerView()
		return n == 0
	})
}
