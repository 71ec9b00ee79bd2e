package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/protobuf/proto"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// TestIdleReplicaExactAfterPluginRestart: a replica whose engine has sent
// no KV event (no request served) is exact on a router after the plugin
// restarts beside it, although its engine has nothing to replay: the new
// plugin announces it holding nothing once the replay comes back empty.
// The router is started after the restart, so what it knows comes from
// the new plugin alone (as after its driver_expiry, or for a router
// upgraded later). The engine publishes on ipc:// sockets in its task
// directory, which the new plugin connects to again. Real Consul agent,
// router, plugin binary under the plugin host, vllm-sim.
func TestIdleReplicaExactAfterPluginRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the plugin and vllm-sim processes")
	}
	agent := consultest.Start(t)
	plugin := buildPlugin(t)
	cfg := map[string]any{"engine": simBinary(t), "consul_address": agent.Addr, "ingest_token": token, "kv_flush_interval": "50ms"}
	h1 := launchPlugin(t, plugin, cfg)
	port := netport.FreeTCP(t)
	task, err := pluginhost.NewTask(shortTempDir(t), pluginhost.TaskSpec{
		Name: "shard", Ports: []*drivers.PortMapping{{Label: "http", Value: int32(port), HostIp: "127.0.0.1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(task.Close)
	c := testCtx(t)
	if err := h1.EncodeTaskConfig(c, task, map[string]any{"model": model, "kv_events": true, "block_size": 16,
		"args": []string{"--sim-latency=false", "--seed", "1"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := h1.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		t.Fatal(err)
	}
	var st driver.TaskState
	if err := json.Unmarshal(resp.GetHandle().GetDriverState(), &st); err != nil || st.KVDir == "" {
		t.Fatalf("driver state %+v, %v; want KV events over ipc sockets, which the new plugin connects to again", st, err)
	}
	replica := task.Config.GetAllocId() + "/" + task.Config.GetName()
	registerReplica(t, agent.Client, replica, &sim{addr: "127.0.0.1:" + strconv.Itoa(port)}, true)
	r1 := pluginRouter(t, agent.Addr, "router-1")
	poll.Until(t, "the new replica exact on the first router", func() bool { return r1.Replicas().Mode(replica) == scheduler.ModeExact })

	if err := h1.Crash(); err != nil {
		t.Fatal(err)
	}
	h2 := launchPlugin(t, plugin, cfg)
	handle := proto.Clone(resp.GetHandle()).(*drivers.TaskHandle)
	handle.Config.MsgpackDriverConfig = nil // lost across an agent restart
	if _, err := h2.Driver.RecoverTask(c, &drivers.RecoverTaskRequest{Handle: handle}); err != nil {
		t.Fatal(err)
	}
	r2 := pluginRouter(t, agent.Addr, "router-2")
	poll.Until(t, "the idle replica exact on a router that knows only the new plugin", func() bool {
		return r2.Replicas().Mode(replica) == scheduler.ModeExact
	})
	// The first router replaces what the old plugin told it with the new
	// plugin's snapshot, and then hears the announcement too.
	poll.Until(t, "the idle replica exact on the first router again", func() bool {
		return r1.Replicas().Mode(replica) == scheduler.ModeExact
	})
}

// shortTempDir is a test directory whose path is short whatever the
// test's name, so the KV-event sockets of a task directory under it fit a
// Unix socket address and the plugin uses them rather than loopback TCP.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// buildPlugin builds nomad-driver-vllm from this tree.
func buildPlugin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nomad-driver-vllm")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/nomad-driver-vllm")
	cmd.Dir = "../../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	return bin
}

// launchPlugin starts the plugin as the agent's long-lived instance with
// config; when the test ends its shards are destroyed and must be gone.
func launchPlugin(t *testing.T, bin string, config map[string]any) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.Launch(bin, pluginhost.Options{
		Logger: hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: testWriter{t}, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.CloseAtEnd(t, func(hd *drivers.TaskHandle) []int {
		var st driver.TaskState
		if json.Unmarshal(hd.GetDriverState(), &st) != nil {
			return nil
		}
		return []int{st.Supervisor.SupervisorPid, st.Supervisor.EnginePid}
	})
	// As the one-machine fleet does, run engines as the test's own user,
	// root included: the engine binary lives in a directory only it reads.
	config["default_user"], config["denied_users"] = "", []string{}
	if err := h.SetConfig(testCtx(t), config, &base.NomadConfig{Driver: &base.NomadDriverConfig{}}); err != nil {
		t.Fatal(err)
	}
	return h
}

// pluginRouter is a router registered in Consul, where the plugin finds it.
func pluginRouter(t *testing.T, consulAddr, serviceID string) *server.Server {
	t.Helper()
	c := routerConfig(token)
	c.Consul.Address = consulAddr
	c.Consul.Services = []string{"vllm"}
	c.Consul.Register = true
	c.Consul.ServiceID = serviceID
	c.Consul.CheckInterval = time.Second
	return startRouter(t, c)
}

func testCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}
