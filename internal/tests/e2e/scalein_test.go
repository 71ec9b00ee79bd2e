package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// scaleInTokens is the length of the stream that outlives its replica's
// deregistration: at 20 ms a token, seconds longer than the test needs to
// see the replica leave and route around it.
const scaleInTokens = 400

// TestScaleInDrains plays what Nomad does to a replica when a scaling
// policy (or `nomad job scale`) takes it away: it deregisters the
// replica's service, waits the task's shutdown_delay and stops the engine.
// Once the router has dropped the replica, every new request goes to the
// other replica while the stream already running there goes on; when the
// engine is killed (kill_timeout past), the stream continues on the other
// replica and ends whole.
func TestScaleInDrains(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f, r := migrateFleet(t, true)
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": longPrompt(53), "max_tokens": scaleInTokens,
		"ignore_eos": true, "stream": true, "stream_options": map[string]bool{"include_usage": true}})
	resp, err := http.Post("http://"+r.Addr()+"/v1/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	leaving := resp.Header.Get("X-Llmgw-Replica")
	victim := f.sims[leaving]
	if resp.StatusCode != http.StatusOK || victim == nil {
		t.Fatalf("status %d from replica %q", resp.StatusCode, leaving)
	}
	stream := newTokenReader(t, resp)
	stream.read(migrateKillAfter)

	if err := f.agent.Client.Agent().ServiceDeregister(serviceID(leaving)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the router to drop the leaving replica", func() bool {
		_, listed := r.Replicas().Get(leaving)
		return !listed
	})
	for i := range 4 {
		a := call(t, r.Addr(), "/v1/completions", `{"model":"`+model+`","prompt":"`+longPrompt(53)+`","max_tokens":2}`)
		if a.code != http.StatusOK || a.replica == leaving || a.replica == "" {
			t.Errorf("request %d after the deregistration: status %d on %q; want 200 on the other replica", i, a.code, a.replica)
		}
	}
	// The stream still runs on the leaving replica: Nomad has not stopped
	// its engine yet.
	stream.read(migrateKillAfter)
	if err := syscall.Kill(victim.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	last, dones := stream.rest()
	if dones != 1 || last.Usage == nil || last.Usage.CompletionTokens != scaleInTokens {
		t.Fatalf("the stream ended with %d [DONE] and usage %+v; want one [DONE] and %d completion tokens", dones, last.Usage, scaleInTokens)
	}
	if v := metricValue(t, r, `llmgw_stream_migrations_total{result="succeeded"}`); v != 1 {
		t.Errorf("succeeded migrations %v; want 1", v)
	}
}

// tokenReader reads a completion stream's events.
type tokenReader struct {
	t  *testing.T
	sc *bufio.Scanner
}

func newTokenReader(t *testing.T, resp *http.Response) *tokenReader {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &tokenReader{t: t, sc: sc}
}

// next returns the next event's chunk; done is true for [DONE], ok false
// at the end of the stream.
func (r *tokenReader) next() (c sseChunk, done, ok bool) {
	for r.sc.Scan() {
		data, isData := strings.CutPrefix(r.sc.Text(), "data: ")
		if !isData {
			continue
		}
		if data == "[DONE]" {
			return c, true, true
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			r.t.Fatalf("chunk %q: %v", data, err)
		}
		if len(c.Error) > 0 {
			r.t.Fatalf("the stream has an error event: %s", c.Error)
		}
		return c, false, true
	}
	if err := r.sc.Err(); err != nil {
		r.t.Fatalf("read the stream: %v", err)
	}
	return c, false, false
}

// read reads until n chunks with text have arrived.
func (r *tokenReader) read(n int) {
	for got := 0; got < n; {
		c, done, ok := r.next()
		if !ok || done {
			r.t.Fatalf("the stream ended after %d of %d tokens awaited", got, n)
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != nil && *c.Choices[0].Text != "" {
			got++
		}
	}
}

// rest reads to the end and returns the last chunk and the [DONE] count.
func (r *tokenReader) rest() (last sseChunk, dones int) {
	for {
		c, done, ok := r.next()
		switch {
		case !ok:
			return last, dones
		case done:
			dones++
		default:
			last = c
		}
	}
}
