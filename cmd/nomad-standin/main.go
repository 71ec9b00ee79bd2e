// Command nomad-standin serves the stand-in of Nomad's services API
// (nomad/nomadtest) as a process of its own, for `llmgw demo -discovery
// nomad` and `llmgw bench` where no Nomad agent runs. It answers the
// endpoints llmgw's Nomad discovery reads, with Nomad's blocking-query
// semantics, and takes registrations and check results on the control
// endpoints under /_standin/, where the fleet plays the Nomad client's
// part. It also serves the job read and scale endpoints a router that
// scales models from zero calls; jobs come from PUT /_standin/jobs, and
// whoever plays the client reads their counts from GET /v1/job/:job_id.
// Like vllm-sim it is a stand-in: no deployed binary links it.
//
//	nomad-standin [-listen 127.0.0.1:4646] [-token TOKEN]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmgw/llmgw/nomad/nomadtest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "nomad-standin: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("nomad-standin", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4646", "address to serve the API on (host:port; port 0 picks one)")
	token := fs.String("token", "", "ACL token every request must carry in X-Nomad-Token (empty: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s := nomadtest.New(*token)
	mux := http.NewServeMux()
	mux.Handle(nomadtest.ControlPrefix, s.Control())
	mux.Handle("/", s)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The fleet waits for this line's address before it registers.
	fmt.Printf("nomad-standin: serving http://%s\n", ln.Addr())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Blocked reads last up to ten minutes; end them rather than wait.
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}
