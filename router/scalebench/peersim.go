package scalebench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/peers"
	"github.com/llmgw/llmgw/router/peers/peerbench"
)

// peerSim is one router's side of peer sharing in a fleet of routers, in
// this process: its publisher (router/peers, default pacing) sends its
// own load, which changes on every replica at every read, to the other
// routers' tables, each behind a real HTTP server on loopback. Every
// router sends as many messages as it receives, so the process's CPU per
// message is one router's per message sent and received. The publisher
// reads a real load tracker holding a request on every replica at each
// read, as a router's does, and uses the prebuilt loads for the message.
// The receivers hand no sums to a tracker (flushCost prices those).
type peerSim struct {
	cancel  context.CancelFunc
	pub     *peers.Publisher
	tables  []*peers.Table
	servers []*http.Server
	bytes   atomic.Uint64
	ends    []func()
}

const peerToken = "scalebench"

func startPeerSim(routers int, loads []map[string]load.Peer) (_ *peerSim, err error) {
	s := &peerSim{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	targets := make([]peers.Target, 0, routers-1)
	for i := 1; i < routers; i++ {
		id := fmt.Sprintf("router-%02d", i)
		tab, err := peers.NewTable(id, peerToken, load.NewTracker(), time.Minute)
		if err != nil {
			return nil, err
		}
		tab.SetPublishEvery(time.Hour) // no sums: flushCost prices them
		url, err := s.serve(tab)
		if err != nil {
			return nil, err
		}
		s.tables = append(s.tables, tab)
		targets = append(targets, peers.Target{ID: id, URL: url})
	}
	tracker := load.NewTracker()
	for id := range loads[0] {
		_, end := tracker.BeginPrefill(id, 1000, 100)
		s.ends = append(s.ends, end)
	}
	reads := 0
	own := func() map[string]load.Peer {
		tracker.Own() // what reading a router's load costs
		reads++
		return loads[reads%len(loads)]
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.pub, err = peers.StartPublisher(ctx, peers.PublisherOptions{Self: "router-00", Token: peerToken, Own: own,
		Targets: func() []peers.Target { return targets }})
	return s, err
}

// serve runs tab behind an HTTP server on loopback, counting the bytes
// its connections read, and returns its URL.
func (s *peerSim) serve(tab *peers.Table) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("peer sim: listen: %w", err)
	}
	srv := &http.Server{Handler: tab, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	go func() {
		if err := srv.Serve(peerbench.CountBytes(ln, &s.bytes)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err) // a loopback listener does not fail
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

func (s *peerSim) close() {
	if s.pub != nil {
		s.pub.Close()
	}
	if s.cancel != nil {
		s.cancel()
	}
	for _, srv := range s.servers {
		_ = srv.Close()
	}
	for _, end := range s.ends {
		end()
	}
}

// warm waits until every table has taken two compact messages: the
// first post to a peer is JSON, then the directory goes once.
func (s *peerSim) warm() error {
	deadline := time.Now().Add(time.Minute)
	for _, tab := range s.tables {
		for tab.Stats().Compact < 2 {
			if time.Now().After(deadline) {
				return fmt.Errorf("peer sim: a table took %+v in a minute; want 2 compact messages", tab.Stats())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// peerWindow is what one window of the sim counted.
type peerWindow struct {
	msgs, bytes uint64
	cpu         time.Duration
	secs        float64
}

// window lets the sim run for d and counts the messages the tables took,
// the bytes their connections read and the process's CPU time.
func (s *peerSim) window(d time.Duration) (peerWindow, error) {
	accepted := func() (n uint64) {
		for _, tab := range s.tables {
			n += tab.Stats().Accepted
		}
		return n
	}
	m0, b0, c0, t0 := accepted(), s.bytes.Load(), peerbench.CPUTime(), time.Now()
	time.Sleep(d) // the publisher runs on its own
	m1, b1, c1 := accepted(), s.bytes.Load(), peerbench.CPUTime()
	w := peerWindow{msgs: m1 - m0, bytes: b1 - b0, cpu: c1 - c0, secs: time.Since(t0).Seconds()}
	if w.msgs == 0 {
		return w, fmt.Errorf("peer sim: no message in %v", d)
	}
	return w, nil
}
