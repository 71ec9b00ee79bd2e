package plugin

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Handshake is the go-plugin handshake a Nomad client expects from a driver
// plugin. The values are interface facts: a Nomad agent refuses a plugin
// whose cookie or protocol version differ.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  2,
	MagicCookieKey:   "NOMAD_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "e4327c2e01eabfd75a8a67adb114fb34a757d57eee7728d857a8cec6e91a7255",
}

// Plugin-set keys Nomad's client dispenses. With gRPC they never cross the
// wire; they only name the two clients in a host's plugin set.
const (
	KeyBase   = "base"
	KeyDriver = "driver"
)

// APIVersion is the only driver API version Nomad agents speak.
const APIVersion = "0.1.0"

// Driver is what a task driver plugin serves: Nomad's base plugin service and
// its driver service, both on the one gRPC server go-plugin creates.
type Driver interface {
	base.BasePluginServer
	drivers.DriverServer
}

// Serve runs d as a Nomad driver plugin on stdin/stdout/stderr and returns
// when the client kills the plugin. It must be the first thing a plugin main
// does that touches stdout: the client parses the first stdout line as the
// handshake. Logs go to stderr as hclog JSON, which Nomad re-logs.
func Serve(d Driver, logger hclog.Logger) {
	// Once the agent dies our stderr is a broken pipe; without this the
	// next log line would kill the plugin with SIGPIPE and orphan recovery.
	signal.Ignore(syscall.SIGPIPE)
	if logger == nil {
		logger = NewLogger("plugin")
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         Set(d),
		GRPCServer:      func(opts []grpc.ServerOption) *grpc.Server { return NewGRPCServer(logger, opts...) },
		Logger:          logger,
	})
}

// NewGRPCServer is go-plugin's default server plus interceptors that turn
// a handler's panic into an Internal error (logged with its stack), so one
// bad request never takes the plugin, and Nomad's view of every task,
// down with it.
func NewGRPCServer(logger hclog.Logger, opts ...grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer recoverTo(logger, info.FullMethod, &err)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer recoverTo(logger, info.FullMethod, &err)
			return h(srv, ss)
		}),
	)
	return goplugin.DefaultGRPCServer(opts)
}

func recoverTo(logger hclog.Logger, method string, err *error) {
	if r := recover(); r != nil {
		logger.Error("panic in plugin RPC", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "%s: internal error: %v", method, r)
	}
}

// NewLogger returns the JSON stderr logger Nomad expects from plugins.
func NewLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.Info,
		JSONFormat: true,
		Output:     os.Stderr,
	})
}

// Set is the go-plugin plugin set for a driver: served, it registers d's two
// services; used by a host, it dispenses the matching gRPC clients (d may
// then be nil).
func Set(d Driver) goplugin.PluginSet {
	return goplugin.PluginSet{
		KeyBase:   &basePlugin{impl: d},
		KeyDriver: &driverPlugin{impl: d},
	}
}

type basePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl base.BasePluginServer
}

func (p *basePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	base.RegisterBasePluginServer(s, p.impl)
	return nil
}

func (p *basePlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return base.NewBasePluginClient(c), nil
}

type driverPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl drivers.DriverServer
}

func (p *driverPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	drivers.RegisterDriverServer(s, p.impl)
	return nil
}

func (p *driverPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return drivers.NewDriverClient(c), nil
}

// Interface guards.
var (
	_ goplugin.GRPCPlugin = (*basePlugin)(nil)
	_ goplugin.GRPCPlugin = (*driverPlugin)(nil)
)
