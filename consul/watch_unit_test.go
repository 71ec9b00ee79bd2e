package consul

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, 100 * ms}, {2, 200 * ms}, {3, 400 * ms}, {4, 800 * ms}, {5, 1000 * ms}, {50, 1000 * ms}, {1 << 30, 1000 * ms},
	}
	for _, tc := range tests {
		if got := backoff(tc.failures, 100*ms, time.Second); got != tc.want {
			t.Errorf("backoff(%d) = %v; want %v", tc.failures, got, tc.want)
		}
	}
}

func TestNextIndex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		prev, got, want uint64
	}{
		{"first query", 0, 42, 42},
		{"moves forward", 42, 50, 50},
		{"unchanged", 42, 42, 42},
		{"goes backwards: fresh query", 42, 7, 0},
		{"zero index never blocks forever", 0, 0, 1},
	}
	for _, tc := range tests {
		if got := nextIndex(tc.prev, tc.got); got != tc.want {
			t.Errorf("%s: nextIndex(%d, %d) = %d; want %d", tc.name, tc.prev, tc.got, got, tc.want)
		}
	}
}

func TestWatchRejectsBadArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := Watch(ctx, nil, Query{Service: "x"}, ConvertRouters, WatchOptions{}); err == nil {
		t.Error("Watch with nil client: got nil error")
	}
	if _, err := watch(ctx, nil, Query{}, ConvertRouters, WatchOptions{}); err == nil || !strings.Contains(err.Error(), "service name") {
		t.Errorf("Watch without service: got %v; want an error naming the service name", err)
	}
	if _, err := watch[Router](ctx, nil, Query{Service: "x"}, nil, WatchOptions{}); err == nil {
		t.Error("Watch with nil converter: got nil error")
	}
}

func TestServiceValidate(t *testing.T) {
	t.Parallel()
	good := RouterRegistration("r1", "127.0.0.1", 8080, 9000)
	if err := good.validate(); err != nil {
		t.Fatalf("router registration invalid: %v", err)
	}
	if good.Check.URL != "http://127.0.0.1:8080/health" {
		t.Errorf("check URL = %q", good.Check.URL)
	}
	tests := []struct {
		name   string
		mutate func(*Service)
		want   string
	}{
		{"no name", func(s *Service) { s.Name = "" }, "name"},
		{"no id", func(s *Service) { s.ID = "" }, "id"},
		{"bad port", func(s *Service) { s.Port = 70000 }, "port"},
		{"no check", func(s *Service) { s.Check.URL = "" }, "check URL"},
		{"relative check", func(s *Service) { s.Check.URL = "/health" }, "absolute"},
	}
	for _, tc := range tests {
		s := good
		tc.mutate(&s)
		err := s.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v; want an error mentioning %q", tc.name, err, tc.want)
		}
		if _, err := register(context.Background(), nil, s); err == nil {
			t.Errorf("%s: register accepted an invalid service", tc.name)
		}
	}
	if _, err := Register(context.Background(), nil, good); err == nil {
		t.Error("Register with nil client: got nil error")
	}
}
