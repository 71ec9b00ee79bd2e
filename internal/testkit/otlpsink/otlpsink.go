// Package otlpsink is an OTLP/HTTP traces receiver for tests: it decodes
// each export with the OpenTelemetry protocol's own protobuf types
// (go.opentelemetry.io/proto/otlp), answers as a collector does, and
// keeps the spans for the test to read. It stands in for a collector's
// otlp receiver, whose module would bring the collector's component
// framework into this module's build for one test.
package otlpsink

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Path is where OTLP/HTTP exporters send traces by default.
const Path = "/v1/traces"

// Span is one received span, its ids in lowercase hex as in traceparent.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Kind                          int32 // OTLP's SpanKind: 2 server, 3 client
	// Attrs are the span's attributes: string, int64, float64, bool, or
	// []string for a string array.
	Attrs map[string]any
	// Error: the span's status is an error.
	Error bool
	// Service is the exporter's service.name.
	Service string
}

// Sink is a running receiver.
type Sink struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	exports int
}

// Start runs a receiver on a loopback port until the test ends.
func Start(t testing.TB) *Sink {
	t.Helper()
	s := &Sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Endpoint is the traces URL to give an exporter.
func (s *Sink) Endpoint() string { return s.srv.URL + Path }

// Spans returns the spans received so far, in arrival order.
func (s *Sink) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

// Exports is how many export requests arrived, empty ones included.
func (s *Sink) Exports() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exports
}

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != Path || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST to "+Path, http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer z.Close()
		body = z
	}
	b, err := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.add(&req)
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *Sink) add(req *coltrace.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exports++
	for _, rs := range req.GetResourceSpans() {
		service, _ := attrs(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.spans = append(s.spans, Span{
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()), Name: sp.GetName(), Kind: int32(sp.GetKind()),
					Attrs: attrs(sp.GetAttributes()), Error: sp.GetStatus().GetCode() == 2, Service: service,
				})
			}
		}
	}
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []string
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, e.GetStringValue())
		}
		return out
	}
	return nil
}
