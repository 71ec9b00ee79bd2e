package peerbench

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

type counters struct{ messages, bytes atomic.Uint64 }

// CountBytes wraps ln so that every byte its connections read is added
// to n: the wire bytes a peer-sharing run costs, HTTP framing included,
// which no handler sees. router/scalebench measures with it too.
func CountBytes(ln net.Listener, n *atomic.Uint64) net.Listener {
	return &countingListener{Listener: ln, n: n}
}

// countingListener counts the bytes its connections read.
type countingListener struct {
	net.Listener
	n *atomic.Uint64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Uint64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(uint64(n))
	return n, err
}

// CPUTime is the process's user and system CPU time so far: a run's
// cost is the difference over its measured window, every goroutine of
// the process included.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
