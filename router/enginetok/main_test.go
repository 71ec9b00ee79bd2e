package enginetok

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
)

var sims simproc.Shared

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { sims.Remove() }))
}

const model = "sim-model"

// startSim runs a vllm-sim serving model and returns its host:port.
func startSim(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: bin,
		Args:   append([]string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--seed", "1"}, extra...),
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return strings.TrimPrefix(p.URL, "http://")
}

// replicaSet is a real replica set holding one static replica of model at
// each address.
func replicaSet(addrs ...string) *replicas.Set {
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	set := replicas.New(sink, load.NewTracker(), replicas.Options{})
	var list []replicas.Replica
	for i, a := range addrs {
		list = append(list, replicas.Replica{ID: "r" + string(rune('0'+i)), Model: model, Address: a, BlockSize: 16, Source: "static"})
	}
	set.Replace(list)
	return set
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// logBuffer collects a logger's lines, safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newClient is a client of set logging to out, with a transport whose
// connections close with the test.
func newClient(t *testing.T, set Replicas, out *logBuffer, edit func(*Options)) *Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	o := Options{Replicas: set, Transport: tr, Logger: hclog.New(&hclog.LoggerOptions{Name: "enginetok", Level: hclog.Info, Output: out})}
	if edit != nil {
		edit(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
