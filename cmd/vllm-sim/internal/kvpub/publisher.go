package kvpub

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// ReplayShape selects the replay reply frames.
type ReplayShape int

const (
	// ReplayNew is vLLM >= 0.26: [topic, seq, payload], end ["", ff*8, ""].
	ReplayNew ReplayShape = iota
	// ReplayOld is vLLM 0.9-0.25: [seq, payload], end [ff*8, ""].
	ReplayOld
)

// Config is one data-parallel rank's publisher, vLLM's KVEventsConfig with the
// rank's port offset already applied.
type Config struct {
	Endpoint       string
	ReplayEndpoint string // "" disables replay
	Topic          string
	BufferSteps    int // batches kept for replay
	HWM            int // PUB send high-water mark
	MaxQueueSize   int // batches queued between the engine and the socket
	DPRank         int
	Schema         Schema
	ReplayShape    ReplayShape
}

type batch struct {
	ts     float64
	events []kvcache.Event
}

type sent struct {
	seq     uint64
	payload []byte
}

// Publisher owns the PUB and replay sockets and the goroutine that uses
// them; ZMQ sockets are not safe for concurrent use.
type Publisher struct {
	cfg    Config
	log    *slog.Logger
	queue  chan batch
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	drop int // batches still to withhold from the PUB socket

	// Owned by the goroutine.
	pub, replay *zmq.Socket
	seq         uint64
	ring        ring
	buf         bytes.Buffer
}

// New opens the sockets and starts publishing. It fails when a socket cannot
// bind or connect.
func New(cfg Config, log *slog.Logger) (*Publisher, error) {
	if err := cfg.Schema.Validate(); err != nil {
		return nil, err
	}
	p := &Publisher{cfg: cfg, log: log, queue: make(chan batch, max(cfg.MaxQueueSize, 1)), done: make(chan struct{})}
	var err error
	if p.pub, err = zmq.NewSocket(zmq.PUB); err != nil {
		return nil, fmt.Errorf("kv events: new PUB socket: %w", err)
	}
	cleanup := func() {
		p.pub.Close()
		if p.replay != nil {
			p.replay.Close()
		}
	}
	if err := p.pub.SetSndhwm(cfg.HWM); err != nil {
		cleanup()
		return nil, fmt.Errorf("kv events: set hwm: %w", err)
	}
	if binds(cfg.Endpoint) {
		err = p.pub.Bind(cfg.Endpoint)
	} else {
		err = p.pub.Connect(cfg.Endpoint)
	}
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("kv events: PUB on %s: %w", cfg.Endpoint, err)
	}
	if cfg.ReplayEndpoint != "" {
		if p.replay, err = zmq.NewSocket(zmq.ROUTER); err == nil {
			err = p.replay.Bind(cfg.ReplayEndpoint)
		}
		if err != nil {
			cleanup()
			return nil, fmt.Errorf("kv events: replay ROUTER on %s: %w", cfg.ReplayEndpoint, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(ctx)
	return p, nil
}

// Publish queues one scheduler step's events. Like vLLM's queue.put it
// blocks while the queue is full, stalling the engine, until ctx ends.
func (p *Publisher) Publish(ctx context.Context, ts float64, events []kvcache.Event) error {
	select {
	case p.queue <- batch{ts: ts, events: events}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.done:
		return errors.New("kv events: publisher closed")
	}
}

// Drop withholds the next n batches from the PUB socket: they still take a
// sequence number and stay replayable. It simulates a subscriber losing
// messages past the high-water mark.
func (p *Publisher) Drop(n int) {
	p.mu.Lock()
	p.drop += n
	p.mu.Unlock()
}

// Close publishes what is queued, then closes the sockets and returns once
// the goroutine has stopped.
func (p *Publisher) Close() {
	p.cancel()
	<-p.done
}

// pollEvery bounds how long a replay request waits while no events flow.
const pollEvery = 5 * time.Millisecond

func (p *Publisher) run(ctx context.Context) {
	defer close(p.done)
	defer func() {
		// Linger briefly so that a clean shutdown delivers what was sent.
		_ = p.pub.SetLinger(200 * time.Millisecond)
		p.pub.Close()
		if p.replay != nil {
			_ = p.replay.SetLinger(0)
			p.replay.Close()
		}
	}()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case b := <-p.queue:
			p.send(b)
		case <-tick.C:
		case <-ctx.Done():
			for {
				select {
				case b := <-p.queue:
					p.send(b)
				default:
					return
				}
			}
		}
		p.serveReplay()
	}
}

func (p *Publisher) send(b batch) {
	p.buf.Reset()
	if err := Encode(&p.buf, p.cfg.Schema, b.ts, b.events, p.cfg.DPRank); err != nil {
		p.log.Error("kv events: dropping a batch that cannot be encoded", "seq", p.seq, "err", err)
		return
	}
	payload := bytes.Clone(p.buf.Bytes())
	seq := p.seq
	p.seq++
	if p.replay != nil {
		p.ring.push(sent{seq: seq, payload: payload}, p.cfg.BufferSteps)
	}
	p.mu.Lock()
	withhold := p.drop > 0
	if withhold {
		p.drop--
	}
	p.mu.Unlock()
	if withhold {
		p.log.Info("kv events: withholding a batch on purpose", "seq", seq)
		return
	}
	if _, err := p.pub.SendMessage([]byte(p.cfg.Topic), seqBytes(seq), payload); err != nil {
		p.log.Warn("kv events: send failed", "seq", seq, "err", err)
	}
}

func seqBytes(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

var endSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// serveReplay answers every pending replay request without blocking.
func (p *Publisher) serveReplay() {
	if p.replay == nil {
		return
	}
	for {
		frames, err := p.replay.RecvMessageBytes(zmq.DONTWAIT)
		if err != nil {
			return // EAGAIN: nothing pending
		}
		if len(frames) != 3 || len(frames[2]) != 8 {
			p.log.Warn("kv events: ignoring a malformed replay request", "frames", len(frames))
			continue
		}
		id, start := frames[0], binary.BigEndian.Uint64(frames[2])
		p.ring.each(func(s sent) {
			if s.seq >= start {
				p.reply(id, seqBytes(s.seq), s.payload)
			}
		})
		p.reply(id, endSeq, []byte{})
	}
}

func (p *Publisher) reply(id, seq, payload []byte) {
	var err error
	if p.cfg.ReplayShape == ReplayOld {
		_, err = p.replay.SendMessage(id, []byte{}, seq, payload)
	} else {
		topic := []byte(p.cfg.Topic)
		if bytes.Equal(seq, endSeq) {
			topic = []byte{}
		}
		_, err = p.replay.SendMessage(id, []byte{}, topic, seq, payload)
	}
	if err != nil {
		p.log.Warn("kv events: replay reply failed", "err", err)
	}
}

// ring keeps the last batches for replay, vLLM's deque(maxlen=buffer_steps).
type ring struct {
	items []sent
	head  int // index of the oldest item once full
}

func (r *ring) push(s sent, capacity int) {
	if capacity <= 0 {
		return
	}
	if len(r.items) < capacity {
		r.items = append(r.items, s)
		return
	}
	r.items[r.head] = s
	r.head = (r.head + 1) % len(r.items)
}

func (r *ring) each(f func(sent)) {
	for i := range r.items {
		f(r.items[(r.head+i)%len(r.items)])
	}
}
