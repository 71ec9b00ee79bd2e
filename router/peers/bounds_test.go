package peers

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

func replicasJSON(n int, item string) string {
	return `{"version":1,"router":"replicas","seq":1,"replicas":[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]}`
}

func TestCheckReplicaCount(t *testing.T) {
	t.Parallel()
	one := `{"replica":"r%d","in_flight":1,"in_flight_tokens":2,"prefill_tokens":3}`
	var full []string
	for i := range MaxReplicas {
		full = append(full, fmt.Sprintf(one, i))
	}
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"at the cap", `{"version":1,"router":"a","seq":1,"replicas":[` + strings.Join(full, ",") + `]}`, true},
		{"one over", replicasJSON(MaxReplicas+1, "{}"), false},
		{"a megabyte of empty entries", replicasJSON(300_000, "{}"), false},
		{"scalars count too", replicasJSON(MaxReplicas+1, "1"), false},
		{"nested arrays count once", replicasJSON(10, `[[1,2,3],[4]]`), true},
		{"replicas as a value is no key", `{"router":"replicas","x":[` + strings.Repeat("1,", MaxReplicas+5) + `1]}`, true},
		{"a nested replicas key", `{"x":{"replicas":[` + strings.Repeat("1,", MaxReplicas+5) + `1]}}`, true},
		{"malformed is left to Decode", `{"replicas":[{},{}`, true},
		{"a key in capitals counts", strings.Replace(replicasJSON(MaxReplicas+1, "{}"), `"replicas"`, `"Replicas"`, 1), false},
		{"an escaped key counts", strings.Replace(replicasJSON(MaxReplicas+1, "{}"), `"replicas"`, `"replic\u0061s"`, 1), false},
		{"commas in strings do not count", replicasJSON(2, `"`+strings.Repeat(",", MaxReplicas+1)+`"`), true},
		{"an empty array", replicasJSON(0, ""), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := checkReplicaCount([]byte(tt.body))
			if (err == nil) != tt.ok {
				t.Fatalf("got %v; want ok=%t", err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "more than 4096 replicas") {
				t.Errorf("error %q does not name the cap", err)
			}
		})
	}
}

// TestServeRefusesAmplifyingBody: a 1 MiB body of empty entries, with the
// token, is refused with 400 naming the cap, allocating well under what
// decoding it would.
func TestServeRefusesAmplifyingBody(t *testing.T) {
	tb, _, _ := newTestTable(t)
	body := replicasJSON((MaxBody-100)/3, "{}")
	serve := allocated(func() {
		req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer secret")
		rec := httptest.NewRecorder()
		tb.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "more than 4096 replicas") {
			t.Fatalf("%d %s; want 400 naming the cap", rec.Code, rec.Body)
		}
	})
	decode := allocated(func() { _, _ = Decode(strings.NewReader(body)) })
	if serve > decode/2 {
		t.Errorf("refusing a %d-byte body allocated %d bytes; decoding it %d", len(body), serve, decode)
	}
	t.Logf("a %d-byte body of empty entries refused with %d bytes allocated (decoding it: %d)", len(body), serve, decode)
}

// allocated is the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzCheckReplicaCount: the pre-check never refuses a message Decode
// accepts.
func FuzzCheckReplicaCount(f *testing.F) {
	f.Add([]byte(`{"version":1,"router":"a","seq":1,"replicas":[{"replica":"r","in_flight":1}]}`))
	f.Add([]byte(replicasJSON(3, "{}")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Decode(bytes.NewReader(b)); err == nil {
			if err := checkReplicaCount(b); err != nil {
				t.Fatalf("refused a message Decode accepts: %v", err)
			}
		}
	})
}
