package intake

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	zmq "github.com/pebbe/zmq4"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/lograte"
)

// Sink receives what a listener decodes, and what an intake announces.
// *Store implements it.
type Sink interface {
	Apply(replica string, rank int, b *kvevents.Batch)
	ClearRank(replica string, rank int)
	// Announce says a new engine publishes for replica: it holds nothing.
	Announce(replica string)
	// AnnounceIfUnknown announces replica unless the sink holds state for
	// it, and reports whether it did.
	AnnounceIfUnknown(replica string) bool
}

var _ Sink = (*kvevents.Store)(nil)

// ListenerConfig configures one listener: one data-parallel rank of one
// replica.
type ListenerConfig struct {
	Replica string
	Rank    int
	// Endpoint, when set, is where the SUB socket connects: an ipc://
	// socket the engine's PUB binds (IPCEndpoints). ZeroMQ retries the
	// connection until the socket exists and again whenever the engine
	// binds it anew, so the listener may open before the engine starts and
	// outlives its restarts. Port is then unused.
	Endpoint string
	// Port is the loopback port to bind the SUB socket on when Endpoint is
	// empty; 0 picks a free one. After a plugin restart pass the port used
	// before, so a running engine reconnects by itself.
	Port int
	// ReplayEndpoint is the engine's replay ROUTER socket for this rank,
	// e.g. tcp://127.0.0.1:5600; empty when the engine has none.
	ReplayEndpoint string
	// Topic is the SUB prefix filter; empty accepts every topic.
	Topic string
	// ReplayIdle bounds the wait for each reply of a replay (default 2 s);
	// ReplayTotal bounds a whole replay (default 30 s); after a failed
	// replay none is tried for ReplayCooldown (default 30 s).
	ReplayIdle, ReplayTotal, ReplayCooldown time.Duration
	// CatchUpEvery is how long the live stream may stay quiet before the
	// listener asks the replay socket for anything newer (default 2 s).
	// PUB/SUB drops what an engine sends before the subscription reaches
	// it, and a lost batch is otherwise noticed only when a later one
	// arrives: an engine that goes quiet right after would stay behind.
	CatchUpEvery time.Duration
	Logger       hclog.Logger
}

// ListenerStats counts a listener's traffic and repairs.
type ListenerStats struct {
	Batches    uint64 // batches applied (live and replayed)
	Replayed   uint64 // of those, batches that came by replay
	Duplicates uint64 // live batches already applied by a replay
	Gaps       uint64 // sequence gaps seen on the live stream
	Lost       uint64 // batches neither received nor recovered by replay
	Restarts   uint64 // sequence went backwards: the engine restarted unannounced
	// Announced counts EngineRestarted calls, each counted before the call
	// returns; they are not Restarts: the caller knows of them already.
	Announced   uint64
	ReplayFails uint64 // replay attempts that failed or timed out
	BadFrames   uint64 // messages without 3 frames or an 8-byte sequence
	// Disconnects counts publisher connections that ended: an engine
	// exiting, or libzmq cutting one off for a message over
	// MaxMessageBytes, which it drops unread.
	Disconnects uint64
	Malformed   uint64 // payloads the decoder rejected
	LastSeq     int64  // last applied sequence number, -1 before the first
	Decode      DecodeStats
}

// Listener receives one engine publisher's KV events on a SUB socket,
// connected to the engine's ipc:// socket or bound on 127.0.0.1, tracks its sequence numbers, repairs gaps by replay, and
// applies the batches to a Sink. Its goroutine owns the sockets; Close stops
// it and waits.
type Listener struct {
	cfg    ListenerConfig
	sink   Sink
	log    hclog.Logger
	zctx   *zmq.Context
	sub    *zmq.Socket
	mon    *zmq.Socket // reports sub's disconnects
	port   int
	cancel context.CancelFunc
	done   chan struct{}

	dec      Decoder
	liveLast int64 // last sequence seen live, -1 none
	// replayPause is when replays may be tried again after one failed.
	replayPause time.Time
	reset       chan struct{}
	badLog      lograte.Limiter

	mu    sync.Mutex // guards stats and replayed
	stats ListenerStats
	// caughtUp, when set, runs once after the next catch-up replay that
	// reached the engine's end marker (OnCaughtUp).
	caughtUp func()
}

// Listen connects or binds the SUB socket and starts receiving. It returns at once: an
// error means the socket could not be opened, and the caller should start
// the engine without events (docs/ARCHITECTURE.md, behaviour 3).
func Listen(cfg ListenerConfig, sink Sink) (*Listener, error) {
	if cfg.ReplayIdle <= 0 {
		cfg.ReplayIdle = 2 * time.Second
	}
	if cfg.ReplayTotal <= 0 {
		cfg.ReplayTotal = 30 * time.Second
	}
	if cfg.ReplayCooldown <= 0 {
		cfg.ReplayCooldown = 30 * time.Second
	}
	if cfg.CatchUpEvery <= 0 {
		cfg.CatchUpEvery = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	log = log.With("replica", cfg.Replica, "rank", cfg.Rank)
	zctx, err := zmq.NewContext()
	if err != nil {
		return nil, fmt.Errorf("kv events listener: zmq context: %w", err)
	}
	sub, port, err := openSub(zctx, cfg)
	if err != nil {
		_ = zctx.Term()
		return nil, fmt.Errorf("kv events listener for %s rank %d: %w", cfg.Replica, cfg.Rank, err)
	}
	mon, err := watchDisconnects(zctx, sub)
	if err != nil {
		_ = sub.Close()
		_ = zctx.Term()
		return nil, fmt.Errorf("kv events listener for %s rank %d: %w", cfg.Replica, cfg.Rank, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{
		cfg: cfg, sink: sink, log: log, zctx: zctx, sub: sub, mon: mon, port: port,
		cancel: cancel, done: make(chan struct{}), liveLast: -1,
		reset:  make(chan struct{}, 1),
		badLog: lograte.Limiter{Every: 10 * time.Second},
	}
	l.stats.LastSeq = -1
	go l.run(ctx)
	return l, nil
}

// openSub opens the SUB socket, limited and subscribed, and connects it
// to cfg.Endpoint or binds it on cfg.Port; it returns the bound port (0
// when it connected).
func openSub(zctx *zmq.Context, cfg ListenerConfig) (*zmq.Socket, int, error) {
	sub, err := zctx.NewSocket(zmq.SUB)
	if err != nil {
		return nil, 0, fmt.Errorf("SUB socket: %w", err)
	}
	fail := func(err error) (*zmq.Socket, int, error) {
		_ = sub.Close()
		return nil, 0, err
	}
	if err := sub.SetLinger(0); err != nil {
		return fail(fmt.Errorf("set linger: %w", err))
	}
	if err := limitSocket(sub); err != nil {
		return fail(err)
	}
	if err := sub.SetSubscribe(cfg.Topic); err != nil {
		return fail(fmt.Errorf("subscribe %q: %w", cfg.Topic, err))
	}
	if cfg.Endpoint != "" {
		if err := sub.Connect(cfg.Endpoint); err != nil {
			return fail(fmt.Errorf("connect %s: %w", cfg.Endpoint, err))
		}
		return sub, 0, nil
	}
	port, err := bindLoopback(sub, cfg.Port)
	if err != nil {
		return fail(err)
	}
	return sub, port, nil
}

// bindLoopback binds sub on 127.0.0.1:port (0: any free port) and returns
// the port bound.
func bindLoopback(sub *zmq.Socket, port int) (int, error) {
	ep := "tcp://127.0.0.1:*"
	if port > 0 {
		ep = "tcp://127.0.0.1:" + strconv.Itoa(port)
	}
	if err := sub.Bind(ep); err != nil {
		return 0, fmt.Errorf("bind %s: %w", ep, err)
	}
	last, err := sub.GetLastEndpoint()
	if err != nil {
		return 0, fmt.Errorf("bound endpoint: %w", err)
	}
	_, got, err := splitTCP(last)
	if err != nil {
		return 0, fmt.Errorf("bound endpoint: %w", err)
	}
	return got, nil
}

// Port is the bound loopback port, 0 when the listener connects.
func (l *Listener) Port() int { return l.port }

// Endpoint is the engine's PUB endpoint: the ipc:// socket the listener
// connects to, or the loopback address it bound, to which the engine
// connects.
func (l *Listener) Endpoint() string {
	if l.cfg.Endpoint != "" {
		return l.cfg.Endpoint
	}
	return "tcp://127.0.0.1:" + strconv.Itoa(l.port)
}

// Stats returns a copy of the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// EngineRestarted tells the listener that a new engine process now
// publishes on its port (the driver starts one): the rank's state is
// cleared and sequence tracking starts afresh, even if the new engine's
// first sequence numbers happen to look like a continuation. Call it
// before the new engine starts: the listener handles the reset before any
// message it receives after the call. It is counted in Announced before it
// returns, and never in Restarts, so a caller comparing Restarts before
// and after cannot mistake its own restart for one the engine made.
func (l *Listener) EngineRestarted() {
	l.count(func(s *ListenerStats) { s.Announced++ })
	select {
	case l.reset <- struct{}{}:
	default:
	}
}

// OnCaughtUp runs f once, on the listener's goroutine, after its next
// catch-up replay (the live stream quiet for CatchUpEvery) that the engine
// answered to the end: by then everything the engine still buffers has
// been applied. It never runs without a replay endpoint.
func (l *Listener) OnCaughtUp(f func()) {
	l.mu.Lock()
	l.caughtUp = f
	l.mu.Unlock()
}

// Close stops the listener and waits for its goroutine, which closes the
// sockets. It does not clear the replica's state: a stopped shard is
// removed from the Store by the caller (Store.Remove).
func (l *Listener) Close() error {
	l.cancel()
	<-l.done
	return nil
}

// pollEvery bounds how long the loop waits before noticing cancellation.
const pollEvery = 100 * time.Millisecond

func (l *Listener) run(ctx context.Context) {
	defer close(l.done)
	defer func() {
		_ = l.sub.Close()
		_ = l.mon.Close()
		_ = l.zctx.Term()
	}()
	poller := zmq.NewPoller()
	poller.Add(l.sub, zmq.POLLIN)
	poller.Add(l.mon, zmq.POLLIN)
	lastHeard := time.Now()
	for ctx.Err() == nil {
		l.takeReset()
		polled, err := poller.Poll(pollEvery)
		if err != nil {
			if zmq.AsErrno(err) == zmq.Errno(syscall.EINTR) {
				continue
			}
			l.log.Error("kv events poll failed; listener stops", "error", err)
			return
		}
		if l.monitorOnly(polled) {
			if time.Since(lastHeard) >= l.cfg.CatchUpEvery {
				l.catchUp(ctx)
				lastHeard = time.Now()
			}
			continue
		}
		lastHeard = time.Now()
		for ctx.Err() == nil {
			// A reset announced while messages were queued comes first:
			// what arrives after it is the new engine's.
			l.takeReset()
			msg, err := l.sub.RecvMessageBytes(zmq.DONTWAIT)
			if err != nil {
				if zmq.AsErrno(err) != zmq.Errno(syscall.EAGAIN) && zmq.AsErrno(err) != zmq.Errno(syscall.EINTR) {
					l.log.Warn("kv events receive failed", "error", err)
				}
				break
			}
			l.live(ctx, msg)
		}
	}
}

// catchUp asks the replay socket for every batch after the last applied
// one while the live stream is quiet. Failing is normal (the engine may not
// be up yet, or have no replay socket), so it only logs at debug level and
// does not pause gap repairs.
func (l *Listener) catchUp(ctx context.Context) {
	if l.cfg.ReplayEndpoint == "" {
		return
	}
	before := l.Stats().LastSeq
	if err := l.replay(ctx, before+1, -1); err != nil {
		l.log.Debug("kv events catch-up replay failed", "from", before+1, "error", err)
		return
	}
	l.mu.Lock()
	f := l.caughtUp
	l.caughtUp = nil
	l.mu.Unlock()
	if f != nil {
		f()
	}
	if after := l.Stats().LastSeq; after > before {
		l.log.Info("kv events caught up by replay while the stream was quiet", "from", before+1, "to", after)
	}
}

// takeReset handles a reset EngineRestarted announced, if any.
func (l *Listener) takeReset() {
	select {
	case <-l.reset:
		l.restart(false)
	default:
	}
}

// restart clears the rank and forgets the sequence; seen says the listener
// found out by itself (the sequence went backwards), which counts as a
// restart.
func (l *Listener) restart(seen bool) {
	l.sink.ClearRank(l.cfg.Replica, l.cfg.Rank)
	l.liveLast = -1
	l.mu.Lock()
	l.stats.LastSeq = -1
	if seen {
		l.stats.Restarts++
	}
	l.mu.Unlock()
}

// splitLive checks a live message's shape: [topic, seq(8), payload].
func splitLive(msg [][]byte) (uint64, []byte, error) {
	if len(msg) != 3 {
		return 0, nil, fmt.Errorf("message of %d frames; want 3 (topic, seq, payload)", len(msg))
	}
	if len(msg[1]) != 8 {
		return 0, nil, fmt.Errorf("sequence frame of %d bytes; want 8", len(msg[1]))
	}
	return binary.BigEndian.Uint64(msg[1]), msg[2], nil
}

// live handles one message from the PUB stream.
func (l *Listener) live(ctx context.Context, msg [][]byte) {
	useq, payload, err := splitLive(msg)
	if err != nil {
		l.count(func(s *ListenerStats) { s.BadFrames++ })
		l.badLog.Do(func(n int) { l.log.Warn("bad kv events message skipped", "error", err, "skipped", n) })
		return
	}
	seq := int64(useq & (1<<63 - 1))
	if l.liveLast >= 0 && seq <= l.liveLast {
		l.log.Info("kv events sequence went backwards: engine restarted; clearing its blocks", "seq", seq, "last", l.liveLast)
		l.restart(true)
	}
	l.liveLast = seq
	applied := l.Stats().LastSeq
	if seq <= applied {
		l.count(func(s *ListenerStats) { s.Duplicates++ })
		return
	}
	if seq > applied+1 {
		if applied >= 0 {
			l.count(func(s *ListenerStats) { s.Gaps++ })
		}
		if l.cfg.ReplayEndpoint != "" && time.Now().After(l.replayPause) {
			if err := l.replay(ctx, applied+1, seq); err != nil {
				// An engine without a working replay socket would
				// otherwise stall intake for the idle timeout at every gap.
				l.replayPause = time.Now().Add(l.cfg.ReplayCooldown)
				l.count(func(s *ListenerStats) { s.ReplayFails++ })
				l.log.Warn("kv events replay failed; pausing replays", "from", applied+1, "error", err, "pause", l.cfg.ReplayCooldown)
			}
			applied = l.Stats().LastSeq
			if seq <= applied {
				l.count(func(s *ListenerStats) { s.Duplicates++ })
				return
			}
		}
		if lost := seq - (applied + 1); lost > 0 {
			l.count(func(s *ListenerStats) { s.Lost += uint64(lost) })
			l.log.Warn("kv event batches lost", "from", applied+1, "to", seq-1)
		}
	}
	l.applyPayload(seq, payload, false)
}

// applyPayload decodes and applies one batch and records seq as applied.
// A malformed payload is counted and skipped, but its sequence number still
// counts as seen so it does not trigger replays forever.
func (l *Listener) applyPayload(seq int64, payload []byte, replayed bool) {
	b, err := l.dec.Decode(payload)
	if err != nil {
		l.badLog.Do(func(n int) { l.log.Warn("malformed kv events payload skipped", "seq", seq, "error", err, "skipped", n) })
	} else {
		l.sink.Apply(l.cfg.Replica, l.cfg.Rank, b)
	}
	l.count(func(s *ListenerStats) {
		if err != nil {
			s.Malformed++
		} else {
			s.Batches++
			if replayed {
				s.Replayed++
			}
		}
		s.LastSeq = seq
		s.Decode = l.dec.Stats
	})
}

func (l *Listener) count(f func(*ListenerStats)) {
	l.mu.Lock()
	f(&l.stats)
	l.mu.Unlock()
}
