package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestDataParallelRankChoice runs four data-parallel ranks behind one API
// server, as vLLM's internal load balancer does. Without the
// X-data-parallel-rank header, one request at a time goes round the ranks
// (the rotating scan start of DPLBAsyncMPClient.get_core_engine_for_request
// breaks the ties of idle ranks); with it, every request lands on the rank
// named, whatever the load; a header that is not an integer pins nothing,
// and an integer out of range is a 400, as from vLLM.
func TestDataParallelRankChoice(t *testing.T) {
	p := startSim(t, nil, "--data-parallel-size", "4", "--block-size", "16")
	send := func(i int, rank string) (int, string) {
		t.Helper()
		body := fmt.Sprintf(`{"model":"sim-model","prompt":%s,"max_tokens":2}`, quote(words(100*i, 40)))
		req, err := http.NewRequest(http.MethodPost, p.URL+"/v1/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if rank != "" {
			req.Header.Set("X-data-parallel-rank", rank)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	served := func() [4]float64 {
		t.Helper()
		return engineCounts(t, p, "vllm:request_success_total", 4)
	}

	for i := range 8 {
		if code, body := send(i, ""); code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if got := served(); got != [4]float64{2, 2, 2, 2} {
		t.Errorf("8 requests one at a time served per rank %v; want 2 each", got)
	}

	before := served()
	for i := range 5 {
		if code, body := send(10+i, "2"); code != http.StatusOK {
			t.Fatalf("pinned request %d: %d %s", i, code, body)
		}
	}
	if code, body := send(20, "two"); code != http.StatusOK {
		t.Fatalf("a header that is not an integer: %d %s; want 200, balanced", code, body)
	}
	after := served()
	if after[2]-before[2] < 5 || sum(after)-sum(before) != 6 {
		t.Errorf("5 requests pinned to rank 2 and one balanced: served %v then %v; want rank 2 up by at least 5, 6 in all", before, after)
	}

	code, body := send(30, "4")
	if code != http.StatusBadRequest || !strings.Contains(body, "data_parallel_rank 4 is out of range [0, 4).") {
		t.Errorf("rank 4 of 4: %d %s; want 400 naming the range", code, body)
	}
}

func sum(v [4]float64) float64 { return v[0] + v[1] + v[2] + v[3] }

// engineCounts reads a counter per engine label ("0".."n-1") from /metrics,
// summed over its other labels.
func engineCounts(t *testing.T, p proc, name string, n int) [4]float64 {
	t.Helper()
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out [4]float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		for e := range n {
			if strings.Contains(line, `engine="`+strconv.Itoa(e)+`"`) {
				f := strings.Fields(line)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				if err != nil {
					t.Fatalf("metric line %q: %v", line, err)
				}
				out[e] += v
			}
		}
	}
	return out
}
