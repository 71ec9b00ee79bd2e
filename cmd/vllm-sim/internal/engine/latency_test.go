package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepUntil(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		at   time.Time
		want error
	}{
		{"past, live context", live, time.Now().Add(-time.Second), nil},
		{"past, done context", done, time.Now().Add(-time.Second), context.Canceled},
		{"soon, live context", live, time.Now().Add(time.Millisecond), nil},
		// An hour away: only the context can end this wait.
		{"far, done context", done, time.Now().Add(time.Hour), context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := SleepUntil(tt.ctx, tt.at); !errors.Is(err, tt.want) {
				t.Errorf("got %v; want %v", err, tt.want)
			}
		})
	}
}

// TestSleepUntilWaits: returning nil means t has passed.
func TestSleepUntilWaits(t *testing.T) {
	at := time.Now().Add(5 * time.Millisecond)
	if err := SleepUntil(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); now.Before(at) {
		t.Errorf("returned at %v, before %v", now, at)
	}
}
