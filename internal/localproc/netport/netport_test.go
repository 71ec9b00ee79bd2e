package netport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeTCPsAreDistinctAndBindable(t *testing.T) {
	for _, n := range []int{0, 1, 6} {
		ports, err := FreeTCPs(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != n {
			t.Fatalf("FreeTCPs(%d) gave %d ports", n, len(ports))
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if p <= 0 || p > 65535 {
				t.Errorf("port %d out of range", p)
			}
			if seen[p] {
				t.Errorf("FreeTCPs(%d) gave port %d twice: %v", n, p, ports)
			}
			seen[p] = true
		}
		// Every port was released: the caller can bind each of them.
		for _, p := range ports {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				t.Errorf("port %d still held: %v", p, err)
				continue
			}
			l.Close()
		}
	}
}

func TestFreeTCPIsBindable(t *testing.T) {
	p := FreeTCP(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		t.Fatalf("port %d from FreeTCP not bindable: %v", p, err)
	}
	l.Close()
}

func TestFreeAddrIsBindable(t *testing.T) {
	addr := FreeAddr(t)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("address %s from FreeAddr not bindable: %v", addr, err)
	}
	defer l.Close()
	if got := l.Addr().String(); got != addr {
		t.Errorf("bound %s; want %s", got, addr)
	}
}
