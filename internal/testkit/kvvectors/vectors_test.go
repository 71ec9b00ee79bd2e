package kvvectors

import (
	"encoding/binary"
	"math"
	"testing"
)

// The reference states the sizes of its two annotated payloads; matching them
// shows the transcription dropped or added no byte.
func TestReferenceSizes(t *testing.T) {
	tests := []struct {
		v    Vector
		want int
	}{
		{StoredArray(12), 90},
		{StoredMap(), 211},
	}
	for _, tt := range tests {
		if got := len(tt.v.Payload); got != tt.want {
			t.Errorf("%s: %d bytes; want %d", tt.v.Name, got, tt.want)
		}
	}
}

func TestTimestampBytes(t *testing.T) {
	p := StoredArray(12).Payload
	if p[1] != 0xcb {
		t.Fatalf("ts marker %#x; want float64 0xcb", p[1])
	}
	if got := math.Float64frombits(binary.BigEndian.Uint64(p[2:10])); got != TS {
		t.Errorf("ts %v; want %v", got, TS)
	}
	if got := binary.BigEndian.Uint64(p[26:34]); got != Hash1 {
		t.Errorf("first hash %d; want %d", got, Hash1)
	}
}

func TestNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range All() {
		if seen[v.Name] {
			t.Errorf("duplicate vector name %q", v.Name)
		}
		seen[v.Name] = true
	}
	if len(seen) != 14 {
		t.Errorf("%d vectors; want 14", len(seen))
	}
}

func TestExtendedNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range append(All(), Extended()...) {
		if seen[v.Name] {
			t.Errorf("duplicate vector name %q", v.Name)
		}
		seen[v.Name] = true
		if len(v.Payload) == 0 || len(v.Want.Events) == 0 {
			t.Errorf("%s: empty vector", v.Name)
		}
	}
}
