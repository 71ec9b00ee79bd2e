package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/internal/localproc/netport"
	"github.com/llmgw/llmgw/plugin/pluginhost"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Timeouts of the driver-side steps.
const (
	shardReadyTimeout = 60 * time.Second
	// stopTimeout is the kill_timeout Nomad passes to StopTask: SIGTERM,
	// then SIGKILL of the engine's group after this long.
	stopTimeout = 5 * time.Second
	rpcTimeout  = 30 * time.Second
)

// shard is one vllm-sim task the driver runs, and its Consul service.
type shard struct {
	replica   string // <alloc id>/<task name>, as the driver names it
	allocID   string
	index     int // in start order, for Nomad's group index
	model     string
	url       string
	port      int
	task      *pluginhost.Task
	taskID    string
	handle    *drivers.TaskHandle // from StartTask, for RecoverTask
	serviceID string
	enginePid int
	stopped   bool
	role      string // "" (aggregated), "prefill" or "decode"
	dp        int    // data_parallel_size when over 1, else 0
}

// meta is the shard's service meta: what every llmgw replica declares,
// its role, and its data-parallel size when it has several ranks.
func (s *shard) meta() map[string]string {
	m := map[string]string{
		consul.MetaModel:     s.model,
		consul.MetaReplica:   s.replica,
		consul.MetaBlockSize: strconv.Itoa(blockSize),
		consul.MetaKVEvents:  "true",
		consul.MetaRole:      s.role, // "": aggregated
	}
	if s.dp > 1 {
		m[consul.MetaDataParallelSize] = strconv.Itoa(s.dp)
	}
	return m
}

// startDriver launches nomad-driver-vllm under the plugin host and gives it
// the plugin config a Nomad agent would: the engine, where Consul is, and
// the token that routers accept KV updates with; and one no Nomad agent
// sets, owner_pid, so that the shards' supervisors stop their engines when
// this process dies, however it dies (the plugin itself dies with it by
// its parent-death signal).
func (f *Fleet) startDriver(ctx context.Context) error {
	h, err := f.launchDriver(ctx)
	if err != nil {
		return err
	}
	f.driver = h
	return nil
}

// launchDriver starts the plugin and configures it (startDriver's
// config); on error nothing of it is left running.
func (f *Fleet) launchDriver(ctx context.Context) (*pluginhost.Host, error) {
	h, err := pluginhost.Launch(filepath.Join(f.o.BinDir, "nomad-driver-vllm"), pluginhost.Options{
		Logger: f.log.Named("driver"),
	})
	if err != nil {
		return nil, err
	}
	if err := f.configureDriver(ctx, h); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// configureDriver sends the plugin config to h.
func (f *Fleet) configureDriver(ctx context.Context, h *pluginhost.Host) error {
	cfg := map[string]any{
		"engine":       filepath.Join(f.o.BinDir, "vllm-sim"),
		"ingest_token": f.token,
		"owner_pid":    os.Getpid(),
		// A one-machine fleet runs engines as the user who runs it, root
		// included: it is that user's own machine, not a shared node.
		"default_user": "",
		"denied_users": []string{},
	}
	f.cat.driverConfig(cfg)
	if f.o.FlushInterval > 0 {
		cfg["kv_flush_interval"] = f.o.FlushInterval.String()
	}
	if f.o.KeepAlive > 0 {
		cfg["kv_keep_alive"] = f.o.KeepAlive.String()
	}
	return h.SetConfig(ctx, cfg, &base.NomadConfig{Driver: &base.NomadDriverConfig{}})
}

// startShard allocates task i of the demo-sim job (jobs/demo-sim.nomad.hcl)
// on a free port and starts it through the driver. It does not wait.
func (f *Fleet) startShard(ctx context.Context, i int) (*shard, error) {
	ports, err := shardPorts(2)
	if err != nil {
		return nil, err
	}
	config := map[string]any{
		"model":             f.o.Model,
		"served_model_name": f.o.Model,
		"port":              "http",
		"kv_events":         true,
		"block_size":        blockSize,
		"max_model_len":     f.o.MaxModelLen,
	}
	if f.o.DataParallelSize > 1 {
		config["data_parallel_size"] = f.o.DataParallelSize
	}
	role := f.o.roleOf(i)
	mappings := withRole(role, ports, []*drivers.PortMapping{{Label: "http", Value: int32(ports[0]), HostIp: "127.0.0.1"}}, config)
	task, err := pluginhost.NewTask(filepath.Join(f.dir, "allocs"), pluginhost.TaskSpec{
		Name: "sim", Group: "sim", Job: "demo-sim",
		Ports: mappings,
		CPU:   500, Memory: 256,
	})
	if err != nil {
		return nil, fmt.Errorf("shard %d: %w", i, err)
	}
	s := &shard{
		replica: task.Config.GetAllocId() + "/" + task.Config.GetName(),
		allocID: task.Config.GetAllocId(),
		index:   i,
		model:   f.o.Model,
		dp:      f.o.DataParallelSize,
		url:     "http://127.0.0.1:" + strconv.Itoa(ports[0]),
		port:    ports[0],
		task:    task,
		taskID:  task.Config.GetId(),
		// Nomad's own service id shape: no "/", which Consul's agent
		// endpoints would reject.
		serviceID: "_nomad-task-" + task.Config.GetAllocId() + "-sim-vllm-http",
		role:      role,
	}
	if len(f.o.SimArgs) > 0 {
		config["args"] = f.o.SimArgs
	}
	if err := f.driver.EncodeTaskConfig(ctx, task, config); err != nil {
		task.Close()
		return nil, fmt.Errorf("shard %d: %w", i, err)
	}
	resp, err := f.driver.Driver.StartTask(ctx, &drivers.StartTaskRequest{Task: task.Config})
	if err != nil {
		task.Close()
		return nil, fmt.Errorf("shard %d: start task: %w", i, err)
	}
	s.handle = resp.GetHandle()
	return s, nil
}

// shardPorts chooses a shard's ports; tests replace it to hand a shard a
// port that is taken.
var shardPorts = netport.FreeTCPs

// errPortTaken marks a shard's engine or the Consul agent that exited
// because a port it was to bind was taken.
var errPortTaken = errors.New("a port was taken before the process bound it")

// portRetries bounds how often one shard, or the Consul agent, is
// started on new ports.
const portRetries = 3

// startShards starts shards 0..n-1 through the driver and waits for each
// to serve. A shard whose engine exits because one of its ports was taken
// is started again on new ones: the fleet chooses a shard's ports with
// netport, free when chosen and released for the engine to bind, and the
// driver chooses the engine's replay port the same way, so the two can
// draw one number between a release and a bind, and a fleet of many
// shards now and then did.
func (f *Fleet) startShards(ctx context.Context, n int) error {
	for i := range n {
		s, err := f.startShard(ctx, i)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.shards = append(f.shards, s)
		f.mu.Unlock()
	}
	for _, s := range f.runningShards() {
		for attempt := 1; ; attempt++ {
			err := f.waitShardReady(ctx, s)
			if err == nil {
				break
			}
			if !errors.Is(err, errPortTaken) || attempt > portRetries {
				return err
			}
			f.log.Warn("a port of the shard was taken; starting it again on new ports",
				"replica", s.replica, "port", s.port, "attempt", attempt)
			if err := f.stopTask(ctx, s); err != nil {
				return err
			}
			next, err := f.startShard(ctx, s.index)
			if err != nil {
				return err
			}
			f.mu.Lock()
			f.shards[slices.Index(f.shards, s)] = next
			f.mu.Unlock()
			s = next
		}
	}
	return nil
}

// waitShardReady waits for the driver's health probe to pass, learns the
// engine's pid, and registers the shard's service in the catalogue as Nomad does
// from the jobspec's service block.
func (f *Fleet) waitShardReady(ctx context.Context, s *shard) error {
	err := poll(ctx, shardReadyTimeout, "shard "+s.replica+" to serve", func() error {
		r, err := f.driver.Driver.InspectTask(ctx, &drivers.InspectTaskRequest{TaskId: s.taskID})
		if err != nil {
			return fmt.Errorf("inspect task: %w", err)
		}
		if r.GetTask().GetState() == drivers.TaskState_EXITED {
			stderr := tailOf(s.task.Stderr.String())
			err := fmt.Errorf("engine exited (%v):\n%s", r.GetTask().GetResult(), stderr)
			if strings.Contains(stderr, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		}
		attrs := r.GetDriver().GetAttributes()
		s.enginePid, _ = strconv.Atoi(attrs["engine_pid"])
		if attrs["ready"] != "true" {
			return notYet("driver reports ready=%q", attrs["ready"])
		}
		return nil
	})
	if err != nil {
		return err
	}
	return f.cat.registerShard(ctx, s)
}

func (f *Fleet) deregister(ctx context.Context, s *shard) error {
	return f.cat.deregisterShard(ctx, s)
}

// stopTask stops and destroys the task through the driver, stops draining
// its logs, and makes sure no process of the engine's group is left even
// if the plugin misbehaved.
func (f *Fleet) stopTask(ctx context.Context, s *shard) error {
	defer s.task.Close()
	defer f.killEngine(s)
	if f.driver == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout+rpcTimeout)
	defer cancel()
	if _, err := f.driver.Driver.StopTask(ctx, &drivers.StopTaskRequest{TaskId: s.taskID, Timeout: durationpb.New(stopTimeout)}); err != nil {
		return fmt.Errorf("stop task %s: %w", s.replica, err)
	}
	if _, err := f.driver.Driver.DestroyTask(ctx, &drivers.DestroyTaskRequest{TaskId: s.taskID, Force: true}); err != nil {
		return fmt.Errorf("destroy task %s: %w", s.replica, err)
	}
	return nil
}

// killEngine is the last resort: SIGKILL to the engine's process group,
// but only while that pid still runs our vllm-sim (pids are reused).
func (f *Fleet) killEngine(s *shard) {
	if s.enginePid <= 0 {
		return
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(s.enginePid) + "/cmdline")
	if err != nil || !strings.Contains(string(cmdline), filepath.Join(f.o.BinDir, "vllm-sim")) {
		return
	}
	f.log.Warn("engine outlived its task; killing its process group", "replica", s.replica, "pid", s.enginePid)
	_ = syscall.Kill(-s.enginePid, syscall.SIGKILL)
}

// tailOf is the end of a task log, for error messages.
func tailOf(s string) string {
	const max = 2 << 10
	if len(s) > max {
		return s[len(s)-max:]
	}
	return s
}
