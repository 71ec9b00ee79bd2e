// Package otlpcollector runs the OpenTelemetry Collector's own OTLP
// receiver (go.opentelemetry.io/collector/receiver/otlpreceiver) in a
// test, on OTLP/HTTP at a loopback port, and hands the test the spans it
// accepted, in otlpsink's shape. Where otlpsink decodes exports with the
// protocol's types, this is the receiver a collector deployment runs: a
// router's exports that it accepts reach a real collector pipeline.
package otlpcollector

import (
	"context"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/llmgw/llmgw/internal/testkit/otlpsink"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// Receiver is a running OTLP receiver.
type Receiver struct {
	addr string
	sink *consumertest.TracesSink
}

// Start runs a receiver until the test ends; it returns once the
// receiver accepts connections.
func Start(t testing.TB) *Receiver {
	t.Helper()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	r := &Receiver{addr: freeAddr(t), sink: new(consumertest.TracesSink)}
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = r.addr
	rcv, err := f.CreateTraces(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, r.sink)
	if err != nil {
		t.Fatalf("otlp receiver: %v", err)
	}
	if err := rcv.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatalf("start the otlp receiver: %v", err)
	}
	t.Cleanup(func() {
		if err := rcv.Shutdown(context.Background()); err != nil {
			t.Errorf("stop the otlp receiver: %v", err)
		}
	})
	poll.Until(t, "the otlp receiver to listen", func() bool {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return r
}

// freeAddr is a loopback address no one listens on now. The receiver
// listens on the address it is given and does not say which port an
// address of port 0 got, so the port is found first (as the collector's
// own tests do).
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Endpoint is the traces URL to give an exporter.
func (r *Receiver) Endpoint() string { return "http://" + r.addr + otlpsink.Path }

// Spans returns the spans the receiver accepted so far, in arrival order.
func (r *Receiver) Spans() []otlpsink.Span {
	var out []otlpsink.Span
	for _, td := range r.sink.AllTraces() {
		for i := range td.ResourceSpans().Len() {
			rs := td.ResourceSpans().At(i)
			service := ""
			if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
				service = v.AsString()
			}
			for j := range rs.ScopeSpans().Len() {
				ss := rs.ScopeSpans().At(j).Spans()
				for k := range ss.Len() {
					out = append(out, span(ss.At(k), service))
				}
			}
		}
	}
	return out
}

func span(sp ptrace.Span, service string) otlpsink.Span {
	traceID, spanID, parent := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
	s := otlpsink.Span{
		TraceID: hex.EncodeToString(traceID[:]), SpanID: hex.EncodeToString(spanID[:]), Name: sp.Name(),
		Kind: int32(sp.Kind()), Attrs: map[string]any{}, Error: sp.Status().Code() == ptrace.StatusCodeError, Service: service,
	}
	if !parent.IsEmpty() {
		s.ParentSpanID = hex.EncodeToString(parent[:])
	}
	for k, v := range sp.Attributes().All() {
		s.Attrs[k] = value(v)
	}
	return s
}

// value is v as otlpsink gives it: string, int64, float64, bool, or
// []string for an array of strings.
func value(v pcommon.Value) any {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeInt:
		return v.Int()
	case pcommon.ValueTypeDouble:
		return v.Double()
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeSlice:
		var out []string
		for _, e := range v.Slice().All() {
			out = append(out, e.AsString())
		}
		return out
	}
	return v.AsString()
}
