// Package pluginhost plays the Nomad client for tests: it launches a driver
// plugin binary through go-plugin exactly as Nomad's client does (handshake,
// gRPC only, the plugin's stderr re-logged), encodes configs the way Nomad's
// pipeline does (HCL JSON, the plugin's hclspec schema, go-cty msgpack),
// builds alloc and task directories with logmon-style stdout/stderr FIFOs,
// exposes the raw gRPC clients so a test can drive every RPC, receives task
// events as Nomad's client does, dropping those no handler would take yet
// (Events), and, when a test ends, destroys every task it started and
// kills any process group they left (Reap, CloseAtEnd).
//
// The plugin dies with its host: it is started with a parent-death signal
// (SIGKILL) from an OS thread kept for its lifetime (internal/localproc/pdeathsig),
// so even a host killed by SIGKILL leaves no plugin process behind. That is
// stricter than Nomad's client, whose plugins outlive an agent restart; a
// host here is a test or a one-machine fleet, and nothing reattaches to its
// plugin later.
//
// It is test support, and it runs the driver for cmd/llmgw/internal/fleet, which
// plays a one-machine Nomad client for `llmgw demo` and the benchmarks; no
// other production code uses it. It imports only plugin/ packages,
// internal/localproc/pdeathsig and libraries, never driver/.
package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/llmgw/llmgw/internal/localproc/pdeathsig"
	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Options adjust how a plugin is launched.
type Options struct {
	Args   []string     // extra argv, like the agent's plugin "x" { args = [...] }
	Env    []string     // added to the host's environment
	Logger hclog.Logger // receives the plugin's re-logged stderr; nil discards
	Stderr io.Writer    // raw copy of the plugin's stderr; nil discards
}

// Host is one launched plugin process and its two gRPC clients. Driver
// remembers the tasks started or recovered through it, for Reap.
type Host struct {
	Base   base.BasePluginClient
	Driver drivers.DriverClient

	client  *goplugin.Client
	thread  *pdeathsig.Thread // the thread the plugin was forked from
	sockets string            // the plugin's unix socket dir, removed with it
	tracked *trackingDriver   // is Driver
}

// Launch starts the plugin binary at path and dispenses its base and driver
// clients, the way Nomad's driver manager does for the long-lived instance.
// The plugin gets SIGKILL when the host process dies: SIGKILL, not SIGTERM,
// because nobody would be left to escalate should it not stop, and the
// plugin has nothing to save on the way out (its tasks' state is the
// host's; with owner_pid set, its supervisors stop their engines
// themselves); nomad-driver-vllm does not even catch SIGTERM. Its gRPC
// socket lives in a directory of the host's, removed when the plugin is
// killed or crashes, so no socket file is left in TMPDIR either (except
// when the host itself is killed).
func Launch(path string, opts Options) (*Host, error) {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	sockets, err := os.MkdirTemp("", "pluginhost-")
	if err != nil {
		return nil, fmt.Errorf("plugin socket dir: %w", err)
	}
	cmd := exec.Command(path, opts.Args...)
	cmd.Env = append(append(cmd.Env, opts.Env...), goplugin.EnvUnixSocketDir+"="+sockets)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		Plugins:          plugin.Set(nil),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           logger,
		Stderr:           opts.Stderr,
	})
	// go-plugin forks in Client.Start, on the caller's goroutine.
	thread, err := pdeathsig.Start(cmd, syscall.SIGKILL, func() error {
		_, err := client.Start()
		return err
	})
	h := &Host{client: client, thread: thread, sockets: sockets}
	if err != nil {
		return h.fail(fmt.Errorf("launch plugin %s: %w", path, err))
	}
	rpc, err := client.Client()
	if err != nil {
		return h.fail(fmt.Errorf("launch plugin %s: %w", path, err))
	}
	b, err := rpc.Dispense(plugin.KeyBase)
	if err != nil {
		return h.fail(fmt.Errorf("dispense base plugin: %w", err))
	}
	d, err := rpc.Dispense(plugin.KeyDriver)
	if err != nil {
		return h.fail(fmt.Errorf("dispense driver plugin: %w", err))
	}
	var ok bool
	if h.Base, ok = b.(base.BasePluginClient); !ok {
		return h.fail(fmt.Errorf("base plugin is a %T", b))
	}
	dc, ok := d.(drivers.DriverClient)
	if !ok {
		return h.fail(fmt.Errorf("driver plugin is a %T", d))
	}
	h.tracked = &trackingDriver{DriverClient: dc, handlers: &handlers{}}
	h.Driver = h.tracked
	return h, nil
}

// fail kills a half-launched plugin and returns err.
func (h *Host) fail(err error) (*Host, error) {
	h.kill()
	return nil, err
}

// kill kills the plugin process if it still runs, reaps it, waits until
// the thread it was forked from is released, and removes its socket dir.
func (h *Host) kill() {
	h.client.Kill()
	<-h.thread.Done()
	_ = os.RemoveAll(h.sockets)
}

// Pid is the plugin process id.
func (h *Host) Pid() int {
	if rc := h.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Exited reports whether the plugin process has exited.
func (h *Host) Exited() bool { return h.client.Exited() }

// Close shuts the plugin down the way an agent does on shutdown: the
// optional Shutdown RPC, then go-plugin's graceful kill (SIGKILL after 2s).
func (h *Host) Close() {
	if !h.client.Exited() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownBudget)
		_, _ = h.Driver.Shutdown(ctx, &drivers.ShutdownRequest{})
		cancel()
	}
	h.kill()
}

// Crash kills the plugin process with SIGKILL, as a crash or `kill -9`
// would, and waits until go-plugin has seen it exit. Tasks the plugin started
// must survive this.
func (h *Host) Crash() error {
	pid := h.Pid()
	if pid == 0 {
		return errors.New("crash plugin: no process")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("crash plugin %d: %w", pid, err)
	}
	h.kill() // reaps the process and closes the connection
	return nil
}
