package driver_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
)

// TestInProcessNoLeaks runs the driver in this process to account for its
// goroutines: Close with a shard running leaves the shard alone and no
// goroutine behind; a second driver recovers the shard, stops it, and
// leaves nothing behind either.
func TestInProcessNoLeaks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c := context.Background()
	newDriver := func() *driver.Driver {
		store := kvevents.NewStore()
		d := driver.New(driver.Options{KV: driver.StoreIntake{Store: store}, Store: store})
		cfg, err := nomadconfig.EncodeConfig(mustSchema(t, d), map[string]any{"engine": simBin}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.SetConfig(c, &base.SetConfigRequest{MsgpackConfig: cfg, NomadConfig: &base.NomadConfig{}}); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1 := newDriver()
	task, err := pluginhost.NewTask(t.TempDir(), pluginhost.TaskSpec{Name: "shard",
		Ports: []*drivers.PortMapping{{Label: "http", Value: int32(netport.FreeTCP(t)), HostIp: "127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close()
	ts, _ := d1.TaskConfigSchema(c, &drivers.TaskConfigSchemaRequest{})
	if task.Config.MsgpackDriverConfig, err = nomadconfig.EncodeConfig(ts.GetSpec(),
		map[string]any{"model": "sim", "kv_events": true, "args": []string{"--sim-latency=false"}}, task.Config.GetEnv()); err != nil {
		t.Fatal(err)
	}
	resp, err := d1.StartTask(c, &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pluginhost.KillLeftovers(resp.GetHandle(), shardGroups); err != nil && !t.Failed() {
			t.Error(err)
		}
	})
	id := task.Config.GetId()
	insp, err := d1.InspectTask(c, &drivers.InspectTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(insp.GetDriver().GetAttributes()["engine_pid"])
	d1.Close()
	if pluginhost.GroupGone(pid) {
		t.Fatal("closing the driver stopped the shard")
	}

	d2 := newDriver()
	defer d2.Close()
	if _, err := d2.RecoverTask(c, &drivers.RecoverTaskRequest{Handle: resp.GetHandle()}); err != nil {
		t.Fatal(err)
	}
	// Stop only once the engine serves: before that it has no SIGTERM
	// handler yet, and dies of the signal instead of exiting cleanly.
	url := engineURL(task)
	poll.Until(t, "the engine to serve", func() bool {
		resp, err := http.Get(url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if _, err := d2.StopTask(c, &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(10 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	w, err := d2.WaitTask(c, &drivers.WaitTaskRequest{TaskId: id})
	if err != nil {
		t.Fatal(err)
	}
	if w.GetResult().GetExitCode() != 0 || w.GetResult().GetSignal() != 0 {
		t.Errorf("wait %v; want vllm-sim's clean exit on SIGTERM", w)
	}
	if _, err := d2.DestroyTask(c, &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the shard's group to vanish", func() bool { return pluginhost.GroupGone(pid) })
}

func mustSchema(t *testing.T, d *driver.Driver) *hclspec.Spec {
	t.Helper()
	s, err := d.ConfigSchema(context.Background(), &base.ConfigSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return s.GetSpec()
}
