package intake

import (
	"path/filepath"
	"strconv"
	"testing"

	zmq "github.com/pebbe/zmq4"
)

// BenchmarkTransport compares the two endpoints an engine could publish
// KV events on: loopback TCP, what the listener binds, and an ipc://
// socket in a private directory, which file permissions could close to
// other users. "stream" is PUB to SUB as the engine sends batches (ns per
// message received); "roundtrip" is one message there and back on a PAIR,
// the latency floor of each. Figures: docs/notes/2026-12-05-kv-socket-limits.md.
func BenchmarkTransport(b *testing.B) {
	for _, tr := range []string{"tcp", "ipc"} {
		for _, size := range []int{1 << 10, 64 << 10} {
			name := tr + "/" + strconv.Itoa(size>>10) + "KiB"
			b.Run("stream/"+name, func(b *testing.B) { benchStream(b, endpointFor(b, tr), size) })
			b.Run("roundtrip/"+name, func(b *testing.B) { benchRoundtrip(b, endpointFor(b, tr), size) })
		}
	}
}

func endpointFor(b *testing.B, tr string) string {
	if tr == "ipc" {
		return "ipc://" + filepath.Join(b.TempDir(), "kv.sock")
	}
	return "tcp://127.0.0.1:*"
}

// pair binds a socket of type bt and connects one of type ct to it.
func pair(b *testing.B, ep string, bt, ct zmq.Type) (bound, conn *zmq.Socket) {
	b.Helper()
	zctx, err := zmq.NewContext()
	if err != nil {
		b.Fatal(err)
	}
	if bound, err = zctx.NewSocket(bt); err != nil {
		b.Fatal(err)
	}
	if conn, err = zctx.NewSocket(ct); err != nil {
		b.Fatal(err)
	}
	for _, s := range []*zmq.Socket{bound, conn} {
		if err := s.SetLinger(0); err != nil {
			b.Fatal(err)
		}
	}
	if err := bound.Bind(ep); err != nil {
		b.Fatal(err)
	}
	last, err := bound.GetLastEndpoint()
	if err != nil {
		b.Fatal(err)
	}
	if err := conn.Connect(last); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		_ = bound.Close()
		_ = zctx.Term()
	})
	return bound, conn
}

// benchStream sends b.N messages from a PUB to a bound SUB, as an engine
// does, after one probe message shows the subscription has arrived.
func benchStream(b *testing.B, ep string, size int) {
	sub, pub := pair(b, ep, zmq.SUB, zmq.PUB)
	if err := sub.SetSubscribe(""); err != nil {
		b.Fatal(err)
	}
	if err := sub.SetRcvhwm(0); err != nil { // unbounded here: count every message
		b.Fatal(err)
	}
	if err := pub.SetSndhwm(0); err != nil {
		b.Fatal(err)
	}
	if err := sub.SetRcvtimeo(10e6); err != nil { // 10 ms per probe
		b.Fatal(err)
	}
	for {
		if _, err := pub.SendBytes([]byte("probe"), 0); err != nil {
			b.Fatal(err)
		}
		if _, err := sub.RecvBytes(0); err == nil {
			break
		}
	}
	if err := sub.SetRcvtimeo(-1); err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	done := make(chan error, 1)
	go func() {
		for range b.N {
			if _, err := sub.RecvBytes(0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range b.N {
		if _, err := pub.SendBytes(msg, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// benchRoundtrip bounces one message between two PAIR sockets b.N times.
func benchRoundtrip(b *testing.B, ep string, size int) {
	x, y := pair(b, ep, zmq.PAIR, zmq.PAIR)
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for range b.N {
		if _, err := y.SendBytes(msg, 0); err != nil {
			b.Fatal(err)
		}
		got, err := x.RecvBytes(0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.SendBytes(got, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := y.RecvBytes(0); err != nil {
			b.Fatal(err)
		}
	}
}
