package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/ctymsgpack"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// StartTask decodes and validates the task config, refuses what the plugin
// config does not allow (the engine's user, env keys and args that load
// code), opens the replica's KV listener when the shard should publish
// events (never failing the start for it), and starts the engine under a
// supervisor writing to Nomad's log FIFOs.
func (d *Driver) StartTask(_ context.Context, req *drivers.StartTaskRequest) (*drivers.StartTaskResponse, error) {
	cfg := req.GetTask()
	id := cfg.GetId()
	if id == "" {
		return nil, taskIDErr(id)
	}
	if _, ok := d.tasks.get(id); ok {
		return nil, status.Errorf(codes.AlreadyExists, "task %s is already started", id)
	}
	pc := d.pluginConfig()
	task, ports, runAs, err := parseStart(cfg, pc)
	if err != nil {
		return nil, err
	}
	replica := cfg.GetAllocId() + "/" + cfg.GetName()
	log := d.log.With("task_id", id, "replica", replica)

	st := TaskState{Version: taskStateVersion, Replica: replica, Task: task, Engine: pc.Engine,
		Dir: filepath.Join(cfg.GetAllocDir(), cfg.GetName()), User: runAs}
	if task.rank() == 0 {
		p := ports[task.Port]
		// The host port: with host networking there is no namespace in
		// which a mapped "to" port could apply.
		st.HTTPHost, st.HTTPPort = hostFor(p.GetHostIp()), int(p.GetValue())
	}

	kv, release := d.openKV(cfg, task, &st, log)
	defer func() {
		if release != nil {
			release()
		}
	}()
	if kv != nil {
		// Before the engine runs: its first event must find the old
		// engine's state gone, and routers learn at once that it holds
		// nothing.
		kv.EngineRestarted()
	}
	var side map[string]string
	if roleDecision(task, pc.Engine) {
		side = d.sideChannel(cfg, task, ports[task.SideChannelPort], st.HTTPHost)
	}
	if st.Env, err = withEngineKey(buildEnv(cfg.GetEnv(), cfg.GetDeviceEnv(), task.Env, side), task.APIKeyEnv); err != nil {
		return nil, err
	}
	argv := append([]string{pc.Engine}, buildArgs(launch{Task: task, Engine: pc.Engine,
		Host: st.HTTPHost, Port: st.HTTPPort, KVDir: st.KVDir, KVPort: st.KVPort, ReplayPort: st.ReplayPort})...)
	proc, err := supervisor.Start(supervisor.Spec{
		Supervisor: d.opts.Supervisor, Argv: argv, Env: st.Env, Dir: st.Dir,
		Stdout: cfg.GetStdoutPath(), Stderr: cfg.GetStderrPath(), User: st.User, Owner: d.taskOwner(),
		ExitFile: filepath.Join(st.Dir, "private", "vllm-"+sanitize(id)+".exit.json"),
	})
	if err != nil {
		return nil, startErr(pc.Engine, err)
	}
	release = nil // the shard runs: keep the listener
	if kv != nil {
		d.events.emit(cfg, "KV events on: "+kvOnWhere(st), kvEventAttrs(st))
	}
	st.Supervisor, st.StartedAt = proc.State(), time.Now()
	h := d.newHandle(cfg, st, proc, false)
	if !d.tasks.add(h) {
		// A concurrent StartTask with the same id won the race.
		_ = proc.Signal(syscall.SIGKILL)
		h.detach()
		return nil, status.Errorf(codes.AlreadyExists, "task %s is already started", id)
	}
	log.Info("engine started", "pid", proc.EnginePid(), "argv", strings.Join(argv, " "))
	d.events.emit(cfg, "engine started", map[string]string{"pid": strconv.Itoa(proc.EnginePid())})
	state, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode driver state: %w", err)
	}
	return &drivers.StartTaskResponse{Handle: &drivers.TaskHandle{
		Version: taskStateVersion, Config: cfg, State: drivers.TaskState_RUNNING, DriverState: state,
	}}, nil
}

// parseStart decodes and validates the task config, given the ports
// allocated to its group, and admits it under the plugin config's policy
// (admit); it returns the ports by label and the user the engine runs as.
// Its errors are InvalidArgument: the job is at fault.
func parseStart(cfg *drivers.TaskConfig, pc Config) (TaskConfig, map[string]*drivers.PortMapping, string, error) {
	ports := map[string]*drivers.PortMapping{}
	var labels []string
	for _, p := range cfg.GetResources().GetPorts() {
		ports[p.GetLabel()] = p
		labels = append(labels, p.GetLabel())
	}
	task, err := ParseTaskConfig(cfg.GetMsgpackDriverConfig(), labels)
	if err != nil {
		return TaskConfig{}, nil, "", status.Error(codes.InvalidArgument, err.Error())
	}
	runAs, err := admit(cfg, task, pc)
	if err != nil {
		return TaskConfig{}, nil, "", status.Error(codes.InvalidArgument, err.Error())
	}
	return task, ports, runAs, nil
}

// openKV opens (or, after a restart of the task, takes over) the
// replica's KV listener when the shard should publish events, recording
// where it meets the engine in st. A failure only turns KV events off: a
// start never fails for an optimisation (docs/ARCHITECTURE.md, behaviour
// 3). release, when not nil, undoes the opening if the start fails.
func (d *Driver) openKV(cfg *drivers.TaskConfig, task TaskConfig, st *TaskState, log hclog.Logger) (KVListener, func()) {
	if ok, why := kvDecision(task, st.Engine); !ok {
		d.events.emit(cfg, "KV events off: "+why, map[string]string{"kv_events": "off"})
		return nil, nil
	}
	id, replica := cfg.GetId(), st.Replica
	o := KVOpen{DataParallel: task.DataParallelSize, Dir: d.kvDir(cfg, task, st, log)}
	lo, hi := d.kvPortRange()
	l, prev, err := d.kv.getInRange(replica, id, o, lo, hi)
	if err != nil {
		log.Warn("kv listener unavailable; starting without kv events", "error", err)
		d.events.emit(cfg, "KV events off: listener failed: "+err.Error(), map[string]string{"kv_events": "off"})
		return nil, nil
	}
	st.KVDir, st.KVPort, st.ReplayPort = l.Dir(), l.Port(), max(l.ReplayPort(), 0)
	if prev == "" {
		return l, func() { d.kv.release(replica, id) }
	}
	log.Info("reusing the replica's kv listener", "where", kvWhere(*st), "previous_task", prev)
	d.events.emit(cfg, "restart seen: keeping the replica's KV listener on "+kvWhere(*st),
		map[string]string{"previous_task": prev})
	return l, func() { d.kv.giveBack(replica, id, prev) }
}

// sideChannel is the NIXL side channel's environment for a prefill or
// decode shard, on port p (its host IP, else the API's host).
func (d *Driver) sideChannel(cfg *drivers.TaskConfig, task TaskConfig, p *drivers.PortMapping, apiHost string) map[string]string {
	host := p.GetHostIp()
	if host == "" {
		host = apiHost
	}
	port := strconv.Itoa(int(p.GetValue()))
	d.events.emit(cfg, "disaggregated: role "+task.Role+", NIXL side channel on port "+port,
		map[string]string{"role": task.Role, "kv_role": task.kvRole(), "side_channel_port": port})
	return sideChannelEnv(task, host, int(p.GetValue()))
}

// startErr classifies a failure to start the engine: a missing or
// forbidden binary is a node or job problem that restarting will not help;
// anything else (out of processes, say) is left to the restart policy.
func startErr(engine string, err error) error {
	err = fmt.Errorf("start engine %s: %w", engine, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err
	}
	return plugin.Recoverable(err)
}

// newHandle starts watching a shard. exited says it ended before this
// plugin ran: its exit gets no Driver event (see RecoverTask).
func (d *Driver) newHandle(cfg *drivers.TaskConfig, st TaskState, proc *supervisor.Process, exited bool) *taskHandle {
	h := &taskHandle{id: cfg.GetId(), cfg: cfg, state: st, proc: proc, done: make(chan struct{}), stopping: exited,
		log: d.log.With("task_id", cfg.GetId(), "replica", st.Replica)}
	d.run(h)
	return h
}

// RecoverTask re-attaches to a shard from driver_state alone (after an
// agent restart the raw task config is gone): the supervisor by pid, the
// KV listener on the same sockets or port, so a running engine's events
// reach it again and the listener replays what it missed.
func (d *Driver) RecoverTask(_ context.Context, req *drivers.RecoverTaskRequest) (*drivers.RecoverTaskResponse, error) {
	hd := req.GetHandle()
	id := hd.GetConfig().GetId()
	if id == "" {
		id = req.GetTaskId()
	}
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "recover: handle without a task id")
	}
	if _, ok := d.tasks.get(id); ok {
		return &drivers.RecoverTaskResponse{}, nil // reattached plugin: already ours
	}
	var st TaskState
	if err := json.Unmarshal(hd.GetDriverState(), &st); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "recover %s: driver state: %v", id, err)
	}
	if st.Version != taskStateVersion || hd.GetVersion() != taskStateVersion {
		return nil, status.Errorf(codes.FailedPrecondition, "recover %s: driver state version %d (handle %d); want %d",
			id, st.Version, hd.GetVersion(), taskStateVersion)
	}
	proc, err := supervisor.Attach(st.Supervisor)
	if err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "recover %s: %v", id, err)
	}
	cfg := hd.GetConfig()
	// Nomad has no handler for the task's events yet (recovered_events.go).
	d.events.hold(id)
	// A shard that exited while no plugin ran (Nomad recovers a stopped
	// allocation's task too, until it collects it) needs no listener, and
	// its old port may be a running shard's now. Nor does it get Driver
	// events: Nomad has its exit already, or reads it from WaitTask, and
	// "recovered" or "engine exited" after the task's "Killed" would only
	// mislead.
	gone := exited(proc)
	if st.hasKV() && !gone {
		d.resumeKV(cfg, id, st)
	}
	h := d.newHandle(cfg, st, proc, gone)
	if !d.tasks.add(h) {
		h.detach()
		return &drivers.RecoverTaskResponse{}, nil // a concurrent recover won
	}
	d.log.Info("task recovered", "task_id", id, "engine_pid", proc.EnginePid(), "exited", gone)
	if !gone {
		d.events.emit(cfg, "recovered after plugin restart", nil)
	}
	return &drivers.RecoverTaskResponse{}, nil
}

// resumeKV opens a recovered shard's listener where its driver state says
// the engine publishes: the same socket directory or the same ports, so
// the running engine's events reach it again, and replays what it missed.
func (d *Driver) resumeKV(cfg *drivers.TaskConfig, id string, st TaskState) {
	o := KVOpen{DataParallel: st.Task.DataParallelSize, Dir: st.KVDir}
	if o.Dir == "" {
		o.Port, o.ReplayPort = st.KVPort, st.ReplayPort
		if o.ReplayPort == 0 {
			o.ReplayPort = -1
		}
	}
	l, prev, err := d.kv.get(st.Replica, id, o)
	if err != nil {
		d.log.Warn("kv listener not opened again after recovery", "task_id", id, "where", kvWhere(st), "error", err)
		d.events.emit(cfg, "KV events off after recovery: "+err.Error(), map[string]string{"kv_events": "off"})
		return
	}
	if prev == "" {
		l.Resumed() // a listener opened just now, beside a running engine
	}
	d.events.emit(cfg, "KV events resumed on "+kvWhere(st), kvEventAttrs(st))
}

// exited reports whether proc's supervisor has exited already.
func exited(proc *supervisor.Process) bool {
	select {
	case <-proc.Done():
		return true
	default:
		return false
	}
}

// ParseTaskConfig decodes a task config as Nomad sends it (go-cty msgpack
// of the task schema) and validates it against the group's port labels.
// Errors name the attribute at fault.
func ParseTaskConfig(msgpack []byte, portLabels []string) (TaskConfig, error) {
	var task TaskConfig
	if err := ctymsgpack.Decode(msgpack, &task); err != nil {
		return TaskConfig{}, fmt.Errorf("invalid task config: %w", err)
	}
	labels := map[string]bool{}
	for _, l := range portLabels {
		labels[l] = true
	}
	if err := task.validate(labels); err != nil {
		return TaskConfig{}, fmt.Errorf("invalid task config: %w", err)
	}
	return task, nil
}

// kvPortRange is the loopback range Nomad's client sets aside for plugin
// subprocesses (client_min_port, client_max_port); 0, 0 when unset.
func (d *Driver) kvPortRange() (int, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dc := d.nomad.GetDriver()
	return int(dc.GetClientMinPort()), int(dc.GetClientMaxPort())
}

// sanitize makes a task id (alloc/task/random) usable in a file name.
func sanitize(id string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, id)
}
