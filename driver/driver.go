package driver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/supervisor"
	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/ctymsgpack"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// taskStateVersion is TaskHandle.version and TaskState.Version; bump it
// when TaskState changes shape, and migrate in RecoverTask.
const taskStateVersion = 1

// TaskState is everything RecoverTask needs, persisted by Nomad as the
// handle's opaque driver_state (JSON). Nomad drops the raw task config
// across an agent restart, so the decoded config travels here too.
type TaskState struct {
	Version    int              `json:"version"`
	Replica    string           `json:"replica"`
	Task       TaskConfig       `json:"task"`
	Engine     string           `json:"engine"`
	Env        []string         `json:"env"`
	Dir        string           `json:"dir"`
	User       string           `json:"user,omitempty"` // the task's user, for exec
	Supervisor supervisor.State `json:"supervisor"`
	StartedAt  time.Time        `json:"started_at"`
	HTTPHost   string           `json:"http_host,omitempty"`
	HTTPPort   int              `json:"http_port,omitempty"`
	// KVDir is the directory of the engine's ipc:// KV-event sockets;
	// after a plugin restart the listeners connect there again. Without
	// it, KVPort and ReplayPort are bound again after a plugin restart, so
	// a running engine reconnects by itself. Neither: the shard has no
	// events.
	KVDir      string `json:"kv_dir,omitempty"`
	KVPort     int    `json:"kv_port,omitempty"`
	ReplayPort int    `json:"replay_port,omitempty"`
}

// hasKV reports whether the shard publishes KV events to a listener.
func (st TaskState) hasKV() bool { return st.KVDir != "" || st.KVPort > 0 }

// Options tune a Driver; zero values take the defaults.
type Options struct {
	Logger hclog.Logger
	// KV opens KV-event listeners; nil runs every shard without events.
	KV KVIntake
	// Supervisor is the binary with the supervise mode (default: this
	// process's executable, i.e. the plugin itself).
	Supervisor string
	// FingerprintPeriod is how often Fingerprint re-sends (default 30s).
	FingerprintPeriod time.Duration
	// HealthPoll is how often a starting engine's /health is polled
	// (default 1s).
	HealthPoll time.Duration
	// Store is the block state KV listeners feed (the KV intake's store);
	// with it, the long-lived instance forwards block state to the routers
	// it finds in Consul.
	Store *kvevents.Store
	// DriverID names this driver to routers (default: the host name).
	DriverID string
}

// Driver is the vllm task driver. It owns a context: every goroutine it
// starts selects on it, and Close cancels and waits for them.
type Driver struct {
	drivers.UnimplementedDriverServer
	base.UnimplementedBasePluginServer

	opts   Options
	log    hclog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	events *eventBus
	tasks  *taskStore
	kv     *kvSet
	wg     sync.WaitGroup // handle goroutines

	mu     sync.Mutex // guards config, owner and nomad
	config *Config
	owner  supervisor.Owner // from config.OwnerPid; zero: tasks have no owner
	nomad  *base.NomadConfig

	fwdMu sync.Mutex // guards fwd
	fwd   *forwarding
}

// New returns a driver that is ready to serve; it starts no goroutine
// until asked, so the short-lived processes Nomad spawns to fingerprint and
// validate stay cheap.
func New(opts Options) *Driver {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.FingerprintPeriod <= 0 {
		opts.FingerprintPeriod = 30 * time.Second
	}
	if opts.HealthPoll <= 0 {
		opts.HealthPoll = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Driver{
		opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		events: newEventBus(), tasks: newTaskStore(), kv: newKVSet(opts.KV, opts.Logger),
	}
}

// Close stops the driver's goroutines without touching the shards, which
// keep running for the next plugin process to recover.
func (d *Driver) Close() {
	d.cancel()
	for _, h := range d.tasks.all() {
		h.detach()
	}
	d.wg.Wait()
	d.stopForwarding()
	d.kv.closeAll()
}

// PluginInfo identifies the plugin to Nomad's loader.
func (d *Driver) PluginInfo(context.Context, *base.PluginInfoRequest) (*base.PluginInfoResponse, error) {
	return &base.PluginInfoResponse{
		Type: base.PluginType_DRIVER, PluginApiVersions: []string{plugin.APIVersion},
		PluginVersion: PluginVersion, Name: PluginName,
	}, nil
}

// ConfigSchema is the agent-config schema.
func (d *Driver) ConfigSchema(context.Context, *base.ConfigSchemaRequest) (*base.ConfigSchemaResponse, error) {
	return &base.ConfigSchemaResponse{Spec: configSpec}, nil
}

// SetConfig decodes and validates the agent config. Nomad calls it twice
// in a throw-away process to validate, then once in the long-lived one, so
// it is idempotent and does no work beyond storing the config.
func (d *Driver) SetConfig(_ context.Context, req *base.SetConfigRequest) (*base.SetConfigResponse, error) {
	var c Config
	if err := ctymsgpack.Decode(req.GetMsgpackConfig(), &c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "invalid plugin config: %v", err)
	}
	if err := c.validate(); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "invalid plugin config: %v", err)
	}
	var owner supervisor.Owner
	if c.OwnerPid > 0 {
		// The owner configures the plugin, so it is alive now: the start
		// time read here is its own, and tells it from a later process
		// that gets its pid.
		o, err := supervisor.OwnerOf(c.OwnerPid)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "invalid plugin config: owner_pid: %v", err)
		}
		owner = o
	}
	d.mu.Lock()
	d.config = &c
	d.owner = owner
	if req.GetNomadConfig() != nil {
		d.nomad = req.GetNomadConfig()
	}
	d.mu.Unlock()
	d.log.Info("plugin configured", "engine", c.Engine, "router_service", c.RouterService, "owner_pid", c.OwnerPid,
		"default_user", c.DefaultUser, "denied_users", c.DeniedUsers)
	// Only the long-lived instance gets nomad_config; the validation
	// processes must stay cheap.
	if req.GetNomadConfig() != nil {
		if err := d.startForwarding(c); err != nil {
			// Routers fall back to approximate routing; tasks still run.
			d.log.Error("kv forwarding not started", "error", err)
		}
	}
	return &base.SetConfigResponse{}, nil
}

// pluginConfig returns the config, or the schema defaults before SetConfig.
func (d *Driver) pluginConfig() Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.config == nil {
		return Config{Engine: "vllm", ConsulAddress: "127.0.0.1:8500", RouterService: "llmgw-router",
			KVFlushInterval: 250 * time.Millisecond, KVKeepAlive: 10 * time.Second,
			DefaultUser: defaultEngineUser, DeniedUsers: []string{"root"}, KVTransport: kvTransportIPC}
	}
	return *d.config
}

// taskOwner is the process whose exit stops new tasks (zero: none).
func (d *Driver) taskOwner() supervisor.Owner {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.owner
}

// Init and Shutdown are optional on Nomad's side (main branch only).
func (d *Driver) Init(context.Context, *drivers.InitRequest) (*drivers.InitResponse, error) {
	return &drivers.InitResponse{}, nil
}

// Shutdown precedes the plugin's kill; shards keep running.
func (d *Driver) Shutdown(context.Context, *drivers.ShutdownRequest) (*drivers.ShutdownResponse, error) {
	return &drivers.ShutdownResponse{}, nil
}

// TaskConfigSchema is the task-config schema.
func (d *Driver) TaskConfigSchema(context.Context, *drivers.TaskConfigSchemaRequest) (*drivers.TaskConfigSchemaResponse, error) {
	return &drivers.TaskConfigSchemaResponse{Spec: taskSpec}, nil
}

// Capabilities declares signals and exec on the host, no filesystem or network
// isolation (vLLM needs the host's GPUs and network), no volumes.
func (d *Driver) Capabilities(context.Context, *drivers.CapabilitiesRequest) (*drivers.CapabilitiesResponse, error) {
	return &drivers.CapabilitiesResponse{Capabilities: &drivers.DriverCapabilities{
		SendSignals: true,
		Exec:        true,
		FsIsolation: drivers.DriverCapabilities_NONE,
		NetworkIsolationModes: []drivers.NetworkIsolationSpec_NetworkIsolationMode{
			drivers.NetworkIsolationSpec_HOST,
		},
		MountConfigs: drivers.DriverCapabilities_NO_MOUNTS,
	}}, nil
}

// TaskEvents streams Driver task events for every task until the stream
// or the plugin ends.
func (d *Driver) TaskEvents(_ *drivers.TaskEventsRequest, stream drivers.Driver_TaskEventsServer) error {
	ch, unsubscribe := d.events.subscribe()
	defer unsubscribe()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case <-d.ctx.Done():
			return nil
		case ev := <-ch:
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

// errNotFound is the status for a task id this plugin does not know.
func errNotFound(id string) error {
	return status.Errorf(codes.NotFound, "task %s not found", id)
}

var errNoTaskID = errors.New("empty task id")

func taskIDErr(id string) error {
	if id == "" {
		return status.Error(codes.InvalidArgument, errNoTaskID.Error())
	}
	return errNotFound(id)
}

var _ plugin.Driver = (*Driver)(nil)
