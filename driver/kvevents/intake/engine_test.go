package intake

import (
	"context"
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"
)

// storedPayload encodes a batch with one BlockStored event in vLLM's 9-field
// array schema. Test payloads use the reference's layout through a generic
// msgpack encoder; the decoder's byte-exact tests use internal/testkit/kvvectors.
func storedPayload(t *testing.T, hashes []uint64, parent *uint64, tokens []uint32, bs int) []byte {
	t.Helper()
	var p any
	if parent != nil {
		p = *parent
	}
	ev := []any{"BlockStored", hashes, p, tokens, bs, nil, "GPU", nil, nil}
	b, err := msgpack.Marshal([]any{1.5, []any{ev}, 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func removedPayload(t *testing.T, hashes ...uint64) []byte {
	t.Helper()
	b, err := msgpack.Marshal([]any{1.5, []any{[]any{"BlockRemoved", hashes, "GPU"}}, 0})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeEngine plays a vLLM publisher: an XPUB (wire-identical to vLLM's PUB,
// but it lets the test wait until the listener's subscription arrived)
// connected to the listener, and a replay ROUTER serving its buffer in the
// old or new reply shape.
type fakeEngine struct {
	t         *testing.T
	zctx      *zmq.Context
	pub       *zmq.Socket
	seq       uint64
	newFormat bool

	mu  sync.Mutex
	buf []buffered

	cancel context.CancelFunc
	done   chan struct{}
}

type buffered struct {
	seq     uint64
	payload []byte
}

func startFakeEngine(t *testing.T, endpoint string, replayPort int, newFormat bool) *fakeEngine {
	t.Helper()
	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{t: t, zctx: zctx, newFormat: newFormat, done: make(chan struct{})}
	if e.pub, err = zctx.NewSocket(zmq.XPUB); err != nil {
		t.Fatal(err)
	}
	must(t, e.pub.SetLinger(0))
	must(t, e.pub.SetXpubVerbose(1)) // pass repeated subscriptions after reconnects
	must(t, e.pub.Connect(endpoint))
	e.awaitSubscriber()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	if replayPort == 0 {
		close(e.done)
	} else {
		router, err := zctx.NewSocket(zmq.ROUTER)
		if err != nil {
			t.Fatal(err)
		}
		must(t, router.SetLinger(0))
		must(t, router.Bind("tcp://127.0.0.1:"+strconv.Itoa(replayPort)))
		go e.serveReplay(ctx, router)
	}
	t.Cleanup(e.stop)
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// awaitSubscriber waits for the listener's subscription message.
func (e *fakeEngine) awaitSubscriber() {
	poller := zmq.NewPoller()
	poller.Add(e.pub, zmq.POLLIN)
	for {
		polled, err := poller.Poll(10 * time.Second)
		if err != nil || len(polled) == 0 {
			e.t.Fatalf("no subscriber connected: %v", err)
		}
		m, err := e.pub.RecvBytes(0)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(m) > 0 && m[0] == 1 { // a subscription, not an unsubscription
			return
		}
	}
}

// publish gives payload the next sequence number and buffers it for replay;
// unless drop, it also sends it live.
func (e *fakeEngine) publish(payload []byte, drop bool) uint64 {
	seq := e.seq
	e.seq++
	e.mu.Lock()
	e.buf = append(e.buf, buffered{seq, payload})
	e.mu.Unlock()
	if !drop {
		var s [8]byte
		binary.BigEndian.PutUint64(s[:], seq)
		if _, err := e.pub.SendMessage([]byte("kv@test"), s[:], payload); err != nil {
			e.t.Fatal(err)
		}
	}
	return seq
}

func (e *fakeEngine) serveReplay(ctx context.Context, router *zmq.Socket) {
	defer close(e.done)
	defer router.Close()
	poller := zmq.NewPoller()
	poller.Add(router, zmq.POLLIN)
	end := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for ctx.Err() == nil {
		polled, err := poller.Poll(20 * time.Millisecond)
		if err != nil || len(polled) == 0 {
			continue
		}
		req, err := router.RecvMessageBytes(0)
		if err != nil || len(req) != 3 || len(req[2]) != 8 {
			continue
		}
		id, start := req[0], binary.BigEndian.Uint64(req[2])
		e.mu.Lock()
		buf := append([]buffered(nil), e.buf...)
		e.mu.Unlock()
		for _, b := range buf {
			if b.seq < start {
				continue
			}
			var s [8]byte
			binary.BigEndian.PutUint64(s[:], b.seq)
			if e.newFormat {
				_, _ = router.SendMessage(id, []byte{}, []byte("kv@test"), s[:], b.payload)
			} else {
				_, _ = router.SendMessage(id, []byte{}, s[:], b.payload)
			}
		}
		if e.newFormat {
			_, _ = router.SendMessage(id, []byte{}, []byte{}, end, []byte{})
		} else {
			_, _ = router.SendMessage(id, []byte{}, end, []byte{})
		}
	}
}

func (e *fakeEngine) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	_ = e.pub.Close()
	_ = e.zctx.Term()
	e.cancel = nil
}
