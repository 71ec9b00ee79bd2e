package listener

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits are the bounds of one listener's connections and requests.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the handler's start.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write (and flush) to the client.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection waiting this long for its
	// next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the header block (net/http answers 431 above it,
	// allowing itself 4 KiB of slack); MaxHeaders the header fields (431).
	MaxHeaderBytes, MaxHeaders int
	// MaxConnections caps the connections open at once; Accept waits
	// while the listener is full.
	MaxConnections int
}

// Listen opens a TCP listener at addr capped at maxConns connections
// (0: no cap), serving TLS when tlsConf is not nil.
func Listen(addr string, maxConns int, tlsConf *tls.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	if maxConns > 0 {
		ln = netutil.LimitListener(ln, maxConns)
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	return ln, nil
}

// NewServer returns an http.Server for h held to l: h runs behind Guard,
// and the server's own ReadTimeout and WriteTimeout stay off so that
// streams may outlive them (see the package doc).
func NewServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{
		Handler:           Guard(h, l),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}
