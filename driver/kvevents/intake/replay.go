package intake

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// errReplayIdle reports a replay socket that stopped answering.
var errReplayIdle = errors.New("replay: no reply in time")

// endSeq is vLLM's replay end marker, (-1).to_bytes(8, "big", signed=True).
var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// replay asks the engine's replay ROUTER for every buffered batch from
// sequence from on and applies them in order, until the end marker. It uses
// a fresh DEALER per attempt (a REQ socket would accept only the first
// reply) and accepts both reply shapes: [seq, payload] (vLLM before 0.26)
// and [topic, seq, payload] (0.26 on), each after the empty delimiter frame.
// upTo is the live sequence that revealed the gap, for logging.
func (l *Listener) replay(ctx context.Context, from, upTo int64) error {
	dealer, err := l.zctx.NewSocket(zmq.DEALER)
	if err != nil {
		return fmt.Errorf("replay socket: %w", err)
	}
	defer dealer.Close()
	if err := dealer.SetLinger(0); err != nil {
		return fmt.Errorf("replay socket linger: %w", err)
	}
	if err := dealer.Connect(l.cfg.ReplayEndpoint); err != nil {
		return fmt.Errorf("replay connect %s: %w", l.cfg.ReplayEndpoint, err)
	}
	var start [8]byte
	binary.BigEndian.PutUint64(start[:], uint64(from))
	if _, err := dealer.SendMessageDontwait([]byte{}, start[:]); err != nil {
		return fmt.Errorf("replay request: %w", err)
	}
	l.log.Debug("replaying kv events", "from", from, "live", upTo)
	poller := zmq.NewPoller()
	poller.Add(dealer, zmq.POLLIN)
	deadline := time.Now().Add(l.cfg.ReplayTotal)
	idleUntil := time.Now().Add(l.cfg.ReplayIdle)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if now.After(deadline) {
			return fmt.Errorf("replay from %d: took longer than %s", from, l.cfg.ReplayTotal)
		}
		if now.After(idleUntil) {
			return errReplayIdle
		}
		polled, err := poller.Poll(min(pollEvery, idleUntil.Sub(now), deadline.Sub(now)))
		if err != nil {
			return fmt.Errorf("replay poll: %w", err)
		}
		if len(polled) == 0 {
			continue
		}
		msg, err := dealer.RecvMessageBytes(zmq.DONTWAIT)
		if err != nil {
			return fmt.Errorf("replay receive: %w", err)
		}
		idleUntil = time.Now().Add(l.cfg.ReplayIdle)
		seq, payload, end, err := splitReplay(msg)
		if err != nil {
			return fmt.Errorf("replay from %d: %w", from, err)
		}
		if end {
			return nil
		}
		l.replayed(seq, payload)
	}
}

// replayed applies one replayed batch unless it was applied already; a
// batch past the next expected one means the engine's buffer no longer held
// the ones between.
func (l *Listener) replayed(seq int64, payload []byte) {
	applied := l.Stats().LastSeq
	if seq <= applied {
		return
	}
	if lost := seq - (applied + 1); lost > 0 {
		l.count(func(s *ListenerStats) { s.Lost += uint64(lost) })
		l.log.Warn("kv event batches no longer in the engine's replay buffer", "from", applied+1, "to", seq-1)
	}
	l.applyPayload(seq, payload, true)
}

// splitReplay reads one replay reply after the DEALER has received it:
// a leading empty delimiter frame, then [seq, payload] or [topic, seq,
// payload]. The end marker has the sequence ff..ff or an empty payload.
func splitReplay(msg [][]byte) (seq int64, payload []byte, end bool, err error) {
	if len(msg) > 0 && len(msg[0]) == 0 {
		msg = msg[1:]
	}
	var seqFrame []byte
	switch len(msg) {
	case 2:
		seqFrame, payload = msg[0], msg[1]
	case 3:
		seqFrame, payload = msg[1], msg[2]
	default:
		return 0, nil, false, fmt.Errorf("reply of %d frames; want 2 or 3", len(msg))
	}
	if len(seqFrame) != 8 {
		return 0, nil, false, fmt.Errorf("reply sequence of %d bytes; want 8", len(seqFrame))
	}
	if bytes.Equal(seqFrame, endSeq) || len(payload) == 0 {
		return 0, nil, true, nil
	}
	return int64(binary.BigEndian.Uint64(seqFrame) & (1<<63 - 1)), payload, false, nil
}
