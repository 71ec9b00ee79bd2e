// Package netport picks free loopback ports for tests and test fixtures
// (vllm-sim's HTTP and ZMQ ports, a Consul agent's six listeners): the
// kernel chooses each number, the listener that held it is closed, and the
// caller binds it again. Another process may take a port between the close
// and the caller's bind; tests accept that small window, and so does
// cmd/llmgw/internal/fleet (the local demo chain), whose programs must be told their
// ports up front and then fail with their own bind error. Production code
// that can bind ":0" itself must do so instead.
//
// It owns no socket past return and imports only the standard library, so
// any package's tests may import it.
package netport

import (
	"fmt"
	"net"
	"strconv"
)

// TB is the part of testing.TB the helpers use. Taking it instead of
// testing.TB keeps the testing package out of binaries that import netport
// (llmgw, through cmd/llmgw/internal/fleet).
type TB interface {
	Helper()
	Fatal(args ...any)
}

// FreeTCPs returns n distinct TCP ports on 127.0.0.1 that were free when
// chosen. Every listener is held until all n are chosen, so no two numbers
// coincide.
func FreeTCPs(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choose free tcp port %d of %d: %w", i+1, n, err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// FreeTCP returns one TCP port on 127.0.0.1 that was free when chosen, or
// fails the test.
func FreeTCP(t TB) int {
	t.Helper()
	ports, err := FreeTCPs(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// FreeAddr returns "127.0.0.1:port" for a TCP port that was free when
// chosen, or fails the test. Tests use it for an address nothing listens
// on, or for a listener a program under test binds itself.
func FreeAddr(t TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreeTCP(t)))
}
