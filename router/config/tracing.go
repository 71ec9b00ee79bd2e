package config

import (
	"fmt"
	"net/url"
	"strconv"
)

// Tracing exports OpenTelemetry spans of each request's life in the
// router (router/tracing) over OTLP/HTTP. It is off while Endpoint is
// empty: a router that traces nothing does no tracing work per request.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP traces URL, as
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT takes it
	// (http://collector:4318/v1/traces); https sends over TLS.
	Endpoint string
	// SampleRatio is the share of new traces recorded, 0..1. A request
	// whose client sent a traceparent follows the client's sampled flag
	// instead (parent-based sampling), so one trace is whole or absent.
	SampleRatio float64
}

func defaultTracing() Tracing { return Tracing{SampleRatio: 1} }

func (t Tracing) validate() []error {
	var errs []error
	if t.SampleRatio < 0 || t.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("tracing_sample_ratio %g: want 0..1", t.SampleRatio))
	}
	if t.Endpoint == "" {
		return errs
	}
	u, err := url.Parse(t.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("tracing_endpoint %q: want an http or https URL such as http://127.0.0.1:4318/v1/traces", t.Endpoint))
	}
	return errs
}

// tracingSettings are Tracing's environment variables and flags.
var tracingSettings = []setting{
	{"LLMGW_TRACING_ENDPOINT", "tracing-endpoint", "OTLP/HTTP traces URL (http://collector:4318/v1/traces); empty: no tracing", str(func(c *Config) *string { return &c.Tracing.Endpoint })},
	{"LLMGW_TRACING_SAMPLE_RATIO", "tracing-sample-ratio", "share of new traces recorded, 0..1 (a client's traceparent decides for its own)", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("tracing sample ratio %q: want a number", v)
		}
		c.Tracing.SampleRatio = f
		return nil
	}},
}

func init() { settings = append(settings, tracingSettings...) }

// applyFileTracing takes the file's tracing settings.
func (c *Config) applyFileTracing(fc *fileConfig) {
	if fc.TracingEndpoint != nil {
		c.Tracing.Endpoint = *fc.TracingEndpoint
	}
	if fc.TracingRatio != nil {
		c.Tracing.SampleRatio = *fc.TracingRatio
	}
}
