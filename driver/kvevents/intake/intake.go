package intake

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Config configures the KV-event intake of one replica's leader
// shard: one listener per data-parallel rank, on the endpoints vLLM derives
// for each rank (RankEndpoint).
type Config struct {
	Replica string
	// DataParallelSize is the number of ranks publishing (0 means 1).
	DataParallelSize int
	// Dir, when set, is a directory that only the engine's user (and root)
	// may enter: the engine binds its event and replay sockets there as
	// ipc:// endpoints (IPCEndpoints) and every listener connects to them,
	// so no other local process can reach them. Port and ReplayPort are
	// then unused, and replay is always on. Check it with CheckIPCDir.
	Dir string
	// Port is rank 0's event port without Dir; rank r uses Port+r. 0 picks
	// a free range.
	Port int
	// ReplayPort is rank 0's replay port without Dir, bound by the engine;
	// rank r uses ReplayPort+r. 0 picks a free range; -1 asks the engine
	// for no replay.
	ReplayPort int
	Topic      string
	Logger     hclog.Logger
}

// Intake is the set of listeners of one replica. Safe for concurrent use.
type Intake struct {
	cfg  Config
	sink Sink

	mu        sync.Mutex // guards listeners
	listeners []*Listener
}

// bindAttempts bounds the search for a free range of consecutive ports.
const bindAttempts = 20

// Open binds one listener per rank. It never blocks on the engine;
// an error means no listener is open, and the shard should start without
// KV events (docs/ARCHITECTURE.md, behaviour 3).
func Open(cfg Config, sink Sink) (*Intake, error) {
	if cfg.DataParallelSize <= 0 {
		cfg.DataParallelSize = 1
	}
	if cfg.Replica == "" {
		return nil, errors.New("kv events intake: empty replica id")
	}
	var lastErr error
	for range bindAttempts {
		in, err := openOnce(cfg, sink)
		if err == nil {
			return in, nil
		}
		lastErr = err
		if cfg.Dir != "" || (cfg.Port != 0 && cfg.ReplayPort != 0) {
			break // fixed endpoints: retrying cannot help
		}
	}
	return nil, fmt.Errorf("kv events intake for %s: %w", cfg.Replica, lastErr)
}

func openOnce(cfg Config, sink Sink) (*Intake, error) {
	if cfg.Dir != "" {
		return openIPC(cfg, sink)
	}
	if cfg.ReplayPort == 0 {
		p, err := freeRange(cfg.DataParallelSize)
		if err != nil {
			return nil, fmt.Errorf("replay ports: %w", err)
		}
		cfg.ReplayPort = p
	}
	in := &Intake{cfg: cfg, sink: sink}
	for rank := range cfg.DataParallelSize {
		lc := ListenerConfig{Replica: cfg.Replica, Rank: rank, Topic: cfg.Topic, Logger: cfg.Logger}
		if cfg.ReplayPort > 0 {
			lc.ReplayEndpoint = "tcp://127.0.0.1:" + strconv.Itoa(cfg.ReplayPort+rank)
		}
		if rank > 0 {
			lc.Port = in.listeners[0].Port() + rank
		} else {
			lc.Port = cfg.Port
		}
		l, err := Listen(lc, sink)
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		in.listeners = append(in.listeners, l)
	}
	in.cfg.Port = in.listeners[0].Port()
	return in, nil
}

// openIPC opens one listener per rank, each connecting to the rank's
// ipc:// socket in cfg.Dir.
func openIPC(cfg Config, sink Sink) (*Intake, error) {
	if err := CheckIPCDir(cfg.Dir, cfg.DataParallelSize); err != nil {
		return nil, err
	}
	cfg.Port, cfg.ReplayPort = 0, 0
	events, replay := IPCEndpoints(cfg.Dir)
	in := &Intake{cfg: cfg, sink: sink}
	for rank := range cfg.DataParallelSize {
		l, err := Listen(ListenerConfig{Replica: cfg.Replica, Rank: rank, Topic: cfg.Topic, Logger: cfg.Logger,
			Endpoint: RankEndpoint(events, rank), ReplayEndpoint: RankEndpoint(replay, rank)}, sink)
		if err != nil {
			_ = in.Close()
			return nil, err
		}
		in.listeners = append(in.listeners, l)
	}
	return in, nil
}

// freeRange finds n consecutive free loopback TCP ports and returns the
// first. They are released again for the engine to bind, so another process
// could take one in between; the engine then fails to bind its replay socket
// and the intake works without replay.
func freeRange(n int) (int, error) {
	for range bindAttempts {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		base := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		ok := true
		for r := 1; r < n; r++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+r))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			_ = l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports", n)
}

// Port is rank 0's event port, to reuse after a plugin restart (0 with
// Dir).
func (in *Intake) Port() int { return in.cfg.Port }

// ReplayPort is rank 0's replay port (-1 without replay, 0 with Dir).
func (in *Intake) ReplayPort() int { return in.cfg.ReplayPort }

// Dir is the directory of the ipc:// sockets, "" over TCP.
func (in *Intake) Dir() string { return in.cfg.Dir }

// replays reports whether the engine is asked for a replay socket.
func (in *Intake) replays() bool { return in.cfg.Dir != "" || in.cfg.ReplayPort > 0 }

// EngineKVConfig is vLLM's --kv-events-config JSON.
type EngineKVConfig struct {
	EnableKVCacheEvents bool   `json:"enable_kv_cache_events"`
	Publisher           string `json:"publisher"`
	Endpoint            string `json:"endpoint"`
	ReplayEndpoint      string `json:"replay_endpoint,omitempty"`
	Topic               string `json:"topic"`
}

// EngineConfig is what the engine needs to publish to this intake. With
// Dir both endpoints are ipc://, which vLLM's PUB and replay ROUTER bind
// and the listeners connect to. Without, the endpoint names 127.0.0.1 (no
// "*"), so vLLM's PUB connects to the bound SUB; its replay ROUTER always
// binds. vLLM derives each rank's endpoints from these (RankEndpoint).
func (in *Intake) EngineConfig() EngineKVConfig {
	c := EngineKVConfig{
		EnableKVCacheEvents: true,
		Publisher:           "zmq",
		Endpoint:            "tcp://127.0.0.1:" + strconv.Itoa(in.cfg.Port),
		Topic:               in.cfg.Topic,
	}
	if in.cfg.Dir != "" {
		c.Endpoint, c.ReplayEndpoint = IPCEndpoints(in.cfg.Dir)
		return c
	}
	if in.cfg.ReplayPort > 0 {
		c.ReplayEndpoint = "tcp://127.0.0.1:" + strconv.Itoa(in.cfg.ReplayPort)
	}
	return c
}

// EngineFlag returns the --kv-events-config value.
func (in *Intake) EngineFlag() string {
	b, _ := json.Marshal(in.EngineConfig()) // plain struct: cannot fail
	return string(b)
}

// EngineRestarted tells every rank's listener that a new engine process
// publishes from now on, and announces the replica, holding nothing, to
// every router session (Store.Announce): a fresh engine is exact at once,
// before its first event. Call it before starting the engine. After a
// plugin restart, when a running engine's state is still to be replayed,
// do not: call Resumed, and the replica is announced by its replayed
// batches, or as holding nothing when the replay has none.
func (in *Intake) EngineRestarted() {
	for _, l := range in.current() {
		l.EngineRestarted()
	}
	in.sink.Announce(in.cfg.Replica)
}

// Resumed says the engine publishing to this intake was running before it
// opened (a plugin restart): the replica is not announced, since it may
// hold blocks, and its state comes back by replay. Once every rank has
// caught up by replay and the sink still knows nothing of the replica,
// the engine has sent no event yet (its replay buffer never empties once
// it has published), so the replica is announced holding nothing
// (Sink.AnnounceIfUnknown) and routers route it exact at once rather than
// after its first event. Without replay nothing is announced: nothing
// then tells an idle engine from one whose events are gone.
func (in *Intake) Resumed() {
	if !in.replays() {
		return
	}
	log := in.cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ls := in.current()
	var left atomic.Int32
	left.Store(int32(len(ls)))
	for _, l := range ls {
		l.OnCaughtUp(func() {
			if left.Add(-1) == 0 && in.sink.AnnounceIfUnknown(in.cfg.Replica) {
				log.Info("replay found no kv state: the engine has sent no event yet; announced the replica empty", "replica", in.cfg.Replica)
			}
		})
	}
}

// Stats returns each rank's listener counters, by rank.
func (in *Intake) Stats() []ListenerStats {
	ls := in.current()
	out := make([]ListenerStats, len(ls))
	for i, l := range ls {
		out[i] = l.Stats()
	}
	return out
}

// Close closes every listener and waits for them. The replica's blocks stay
// in the Store until the caller removes it.
func (in *Intake) Close() error {
	in.mu.Lock()
	ls := in.listeners
	in.listeners = nil
	in.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	return nil
}

func (in *Intake) current() []*Listener {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.listeners
}
