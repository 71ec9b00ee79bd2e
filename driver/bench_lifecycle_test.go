package driver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// BenchmarkStartStop is one shard's lifecycle through the real plugin over
// go-plugin: StartTask (KV listener, supervisor, vllm-sim exec), StopTask
// with SIGTERM until the engine has exited, DestroyTask.
func BenchmarkStartStop(b *testing.B) {
	h, err := pluginhost.Launch(pluginBin, pluginhost.Options{})
	if err != nil {
		b.Fatal(err)
	}
	h.CloseAtEnd(b, shardGroups)
	c := context.Background()
	if err := h.SetConfig(c, map[string]any{"engine": simBin}, &base.NomadConfig{}); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		port := int32(netport.FreeTCP(b))
		task, err := pluginhost.NewTask(root, pluginhost.TaskSpec{Name: "shard",
			Ports: []*drivers.PortMapping{{Label: "http", Value: port, HostIp: "127.0.0.1"}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.EncodeTaskConfig(c, task, map[string]any{"model": "sim", "kv_events": true,
			"args": []string{"--sim-latency=false"}}); err != nil {
			b.Fatal(err)
		}
		id := task.Config.GetId()
		b.StartTimer()
		if _, err := h.Driver.StartTask(c, &drivers.StartTaskRequest{Task: task.Config}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Driver.StopTask(c, &drivers.StopTaskRequest{TaskId: id, Timeout: durationpb.New(10 * time.Second)}); err != nil {
			b.Fatal(err)
		}
		if _, err := h.Driver.DestroyTask(c, &drivers.DestroyTaskRequest{TaskId: id, Force: true}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		task.Close()
		b.StartTimer()
	}
}
