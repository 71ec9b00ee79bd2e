package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// TestRequestLog: each finished request becomes one JSON line naming its
// policy, its workload group (a chat user) and what the router predicted
// against what the engine reported; a write error is kept.
func TestRequestLog(t *testing.T) {
	wl := workload.Workload{Requests: []workload.Request{{ID: 7, Group: "user-3"}}}
	var buf bytes.Buffer
	l := newRequestLog(&buf, wl)
	l.record(bench.Policy{Name: "precise-prefix"}, client.Result{ID: 7, Status: 200, Replica: "a/sim",
		Sent: 1500 * time.Millisecond, TTFT: 80 * time.Millisecond, PromptTokens: 2474, CachedTokens: 2368, PredictedCachedTokens: 2368})
	var got requestRecord
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%q: %v", buf.String(), err)
	}
	want := requestRecord{Policy: "precise-prefix", ID: 7, Group: "user-3", Replica: "a/sim", SentMS: 1500, TTFTMS: 80,
		Status: 200, PromptTokens: 2474, CachedTokens: 2368, PredictedCachedTokens: 2368}
	if got != want {
		t.Errorf("record %+v; want %+v", got, want)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
	bad := newRequestLog(failWriter{}, wl)
	bad.record(bench.Policy{Name: "p"}, client.Result{ID: 7})
	if bad.Err() == nil {
		t.Error("a failed write left no error")
	}
}

// TestRequestLogSweep: in a sweep, each rate's records carry the rate and
// the groups of that rate's workload, which reuses the request ids.
func TestRequestLogSweep(t *testing.T) {
	var buf bytes.Buffer
	l := newRequestLog(&buf, workload.Workload{})
	p := bench.Policy{Name: "round-robin"}
	l.at(0.2, workload.Workload{Requests: []workload.Request{{ID: 0, Group: "burst-0"}}})
	l.record(p, client.Result{ID: 0, Status: 200})
	l.at(0.8, workload.Workload{Requests: []workload.Request{{ID: 0, Group: "burst-0"}, {ID: 1, Group: "burst-1"}}})
	l.record(p, client.Result{ID: 1, Status: 200})
	dec := json.NewDecoder(&buf)
	for _, want := range []requestRecord{{Policy: p.Name, Rate: 0.2, ID: 0, Group: "burst-0", Status: 200},
		{Policy: p.Name, Rate: 0.8, ID: 1, Group: "burst-1", Status: 200}} {
		var got requestRecord
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("record for id %d: %v", want.ID, err)
		}
		if got != want {
			t.Errorf("record %+v; want %+v", got, want)
		}
	}
}

// TestCreateRequestLog: without a path nothing is written; with one the
// records reach the file by the first finish, a second finish is
// harmless, and a path that cannot be created is an error naming the flag.
func TestCreateRequestLog(t *testing.T) {
	l, finish, err := createRequestLog("", workload.Workload{})
	if l != nil || err != nil || finish() != nil {
		t.Errorf("no path: log %v, error %v; want nil, nil", l, err)
	}
	path := filepath.Join(t.TempDir(), "r.jsonl")
	l, finish, err = createRequestLog(path, workload.Workload{Requests: []workload.Request{{ID: 1, Group: "g"}}})
	if err != nil {
		t.Fatal(err)
	}
	l.record(bench.Policy{Name: "p"}, client.Result{ID: 1, Status: 200})
	if err := finish(); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if err := finish(); err != nil {
		t.Errorf("second finish: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"group":"g"`) {
		t.Errorf("file %q (%v); want the record of group g", b, err)
	}
	if _, _, err := createRequestLog(filepath.Join(t.TempDir(), "no", "such", "dir", "r.jsonl"), workload.Workload{}); err == nil || !strings.Contains(err.Error(), "-requests-out") {
		t.Errorf("uncreatable path: error %v; want one naming -requests-out", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
