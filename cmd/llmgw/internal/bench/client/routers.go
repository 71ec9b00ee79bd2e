package client

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Routers finds the routers to send to, as base URLs
// ("http://127.0.0.1:8080").
type Routers interface {
	Routers(ctx context.Context) ([]string, error)
}

// Static is a fixed list of router base URLs.
type Static []string

// Routers returns the list.
func (s Static) Routers(context.Context) ([]string, error) { return s, nil }

// RouterService is the Consul service name routers register under.
const RouterService = "llmgw-router"

// ConsulDNS finds routers by asking a Consul agent's DNS interface for the
// SRV records of a service. Answers are kept for TTL, as a stub resolver
// would, so a busy run does not query per request.
type ConsulDNS struct {
	// Addr is the agent's DNS address, host:port (UDP and TCP).
	Addr string
	// Service defaults to RouterService.
	Service string
	// TTL defaults to 250 ms.
	TTL time.Duration

	mu      sync.Mutex
	cached  []string
	fetched time.Time
}

// Routers returns the passing instances' URLs.
func (d *ConsulDNS) Routers(ctx context.Context) ([]string, error) {
	ttl := d.TTL
	if ttl == 0 {
		ttl = 250 * time.Millisecond
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached != nil && time.Since(d.fetched) < ttl {
		return d.cached, nil
	}
	urls, err := d.lookup(ctx)
	if err != nil {
		return nil, err
	}
	d.cached, d.fetched = urls, time.Now()
	return urls, nil
}

// Forget drops the cached answer, so the next call asks again (after a
// router failed).
func (d *ConsulDNS) Forget() {
	d.mu.Lock()
	d.cached = nil
	d.mu.Unlock()
}

func (d *ConsulDNS) lookup(ctx context.Context) ([]string, error) {
	svc := d.Service
	if svc == "" {
		svc = RouterService
	}
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, d.Addr)
	}}
	name := svc + ".service.consul"
	_, srvs, err := res.LookupSRV(ctx, "", "", name)
	if err != nil {
		return nil, fmt.Errorf("look up %s at %s: %w", name, d.Addr, err)
	}
	hosts := map[string]string{}
	var urls []string
	for _, s := range srvs {
		ip, ok := hosts[s.Target]
		if !ok {
			addrs, err := res.LookupHost(ctx, s.Target)
			if err != nil || len(addrs) == 0 {
				return nil, fmt.Errorf("look up SRV target %s at %s: %v", s.Target, d.Addr, err)
			}
			ip, hosts[s.Target] = addrs[0], addrs[0]
		}
		urls = append(urls, "http://"+net.JoinHostPort(ip, strconv.Itoa(int(s.Port))))
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("no %s instance passes its checks", name)
	}
	return urls, nil
}
