package config

import (
	"flag"
	"strings"
	"testing"
)

// TestTracingSettings: tracing is off by default with every new trace
// sampled once on; the endpoint and ratio come from the file, the
// environment and flags; a bad URL or ratio is refused by name.
func TestTracingSettings(t *testing.T) {
	t.Parallel()
	if d := Default().Tracing; d != (Tracing{SampleRatio: 1}) {
		t.Fatalf("defaults %+v; want off, ratio 1", d)
	}
	c := Default()
	if err := c.ParseHCL([]byte("tracing_endpoint = \"http://otel:4318/v1/traces\"\ntracing_sample_ratio = 0.25\n"), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	if want := (Tracing{Endpoint: "http://otel:4318/v1/traces", SampleRatio: 0.25}); c.Tracing != want {
		t.Fatalf("from the file: %+v; want %+v", c.Tracing, want)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-tracing-sample-ratio", "0.5"}); err != nil {
		t.Fatal(err)
	}
	c, err := f.Resolve([]string{"LLMGW_TRACING_ENDPOINT=https://c:4318/v1/traces", "LLMGW_TRACING_SAMPLE_RATIO=0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tracing{Endpoint: "https://c:4318/v1/traces", SampleRatio: 0.5}); c.Tracing != want {
		t.Errorf("environment then flag: %+v; want %+v", c.Tracing, want)
	}
	for _, tc := range []struct {
		tr   Tracing
		want string // "" when valid
	}{
		{Tracing{SampleRatio: 0}, ""},
		{Tracing{Endpoint: "http://127.0.0.1:4318/v1/traces", SampleRatio: 1}, ""},
		{Tracing{SampleRatio: 1.5}, "tracing_sample_ratio"},
		{Tracing{SampleRatio: -0.1}, "tracing_sample_ratio"},
		{Tracing{Endpoint: "127.0.0.1:4318", SampleRatio: 1}, "tracing_endpoint"},
		{Tracing{Endpoint: "grpc://c:4317", SampleRatio: 1}, "tracing_endpoint"},
	} {
		c := Default()
		c.Tracing = tc.tr
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v; want valid", tc.tr, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v; want an error naming %s", tc.tr, err, tc.want)
		}
	}
}
