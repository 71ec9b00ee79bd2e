package intake

import (
	"fmt"

	zmq "github.com/pebbe/zmq4"
)

// MaxMessageBytes caps one message on the SUB socket (ZMQ_MAXMSGSIZE).
// libzmq reads a frame's length before its body and drops the connection
// of a peer that announces more, without buffering it; the publisher (the
// engine's PUB socket) reconnects by itself, and batches lost meanwhile are
// repaired by replay. The largest legitimate message is one scheduler
// step's KVEventBatch (vLLM publishes one per step): a step computes at most
// max_num_batched_tokens (T) tokens, so per KV-cache group and medium its
// BlockStored events carry at most T token ids (msgpack: at most 5 bytes
// each) and T/block_size block hashes (at most 34 bytes each, a 32-byte
// digest), and its BlockRemoved events at most as many hashes again for the
// blocks it evicted. At block size 16 that is under 9.3 bytes a token; 8 MiB
// holds a step of T = 2^18 tokens (a 256k-token prompt prefilled in one
// step) with a CPU tier, or 2^17 with two groups and a CPU tier
// (docs/notes/2026-12-05-kv-socket-limits.md).
const MaxMessageBytes = 8 << 20

// ReceiveQueue is the SUB socket's receive high-water mark, in messages.
// Messages beyond it are dropped by the publisher (PUB never blocks) and
// repaired by replay like any gap, so it bounds what a stalled listener
// buffers: at most ReceiveQueue × MaxMessageBytes per connection, and in
// practice ReceiveQueue batches of a few kilobytes. 1,000 steps are ten
// seconds of an engine stepping every 10 ms, and a tenth of vLLM's replay
// buffer (buffer_steps, 10,000 by default), so a gap the queue causes is
// always still replayable.
const ReceiveQueue = 1000

// limitSocket applies the size cap and the receive queue to a SUB socket
// before it binds.
func limitSocket(sub *zmq.Socket) error {
	if err := sub.SetMaxmsgsize(MaxMessageBytes); err != nil {
		return fmt.Errorf("set max message size: %w", err)
	}
	if err := sub.SetRcvhwm(ReceiveQueue); err != nil {
		return fmt.Errorf("set receive high-water mark: %w", err)
	}
	return nil
}

// monitorEndpoint is the inproc address of a listener's socket monitor;
// each listener has a ZeroMQ context of its own, so one name serves all.
const monitorEndpoint = "inproc://kv-events-monitor"

// watchDisconnects opens a monitor on sub reporting each publisher whose
// connection ended: an engine that exited, or one libzmq cut off for a
// message over MaxMessageBytes (libzmq reports the two alike).
func watchDisconnects(zctx *zmq.Context, sub *zmq.Socket) (*zmq.Socket, error) {
	if err := sub.Monitor(monitorEndpoint, zmq.EVENT_DISCONNECTED); err != nil {
		return nil, fmt.Errorf("monitor SUB socket: %w", err)
	}
	mon, err := zctx.NewSocket(zmq.PAIR)
	if err != nil {
		return nil, fmt.Errorf("monitor socket: %w", err)
	}
	if err := mon.SetLinger(0); err != nil {
		_ = mon.Close()
		return nil, fmt.Errorf("monitor socket: set linger: %w", err)
	}
	if err := mon.Connect(monitorEndpoint); err != nil {
		_ = mon.Close()
		return nil, fmt.Errorf("monitor socket: connect: %w", err)
	}
	return mon, nil
}

// drainMonitor counts the disconnects the monitor has queued.
func (l *Listener) drainMonitor() {
	for {
		ev, _, _, err := l.mon.RecvEvent(zmq.DONTWAIT)
		if err != nil {
			return
		}
		if ev == zmq.EVENT_DISCONNECTED {
			l.count(func(s *ListenerStats) { s.Disconnects++ })
			l.log.Warn("kv events publisher disconnected: the engine exited, or sent a message over the size cap",
				"max_message_bytes", MaxMessageBytes)
		}
	}
}

// monitorOnly counts what the monitor reported, and reports whether the
// SUB socket has nothing to read.
func (l *Listener) monitorOnly(polled []zmq.Polled) bool {
	live := false
	for _, p := range polled {
		if p.Socket == l.mon {
			l.drainMonitor()
		} else {
			live = true
		}
	}
	return !live
}
