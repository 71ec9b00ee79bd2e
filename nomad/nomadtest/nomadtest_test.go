package nomadtest

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

func start(t *testing.T, token string) *Server {
	t.Helper()
	s := New(token)
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// keys is the set of object keys at every depth of a JSON document, with
// their paths ("[].Services[].Tags"), so that two documents of the same
// shape compare equal whatever their values.
func keys(t *testing.T, doc []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	var out []string
	var walk func(p string, v any, mapOfIDs bool)
	walk = func(p string, v any, mapOfIDs bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				name := p + "." + k
				if mapOfIDs {
					name = p + ".<id>"
				}
				out = append(out, name)
				walk(name, e, false)
			}
		case []any:
			for _, e := range x {
				walk(p+"[]", e, false)
			}
		}
	}
	walk("", v, p2checks(doc))
	slices.Sort(out)
	return slices.Compact(out)
}

// p2checks tells the checks document (an object keyed by check id) apart.
func p2checks(doc []byte) bool { return len(doc) > 0 && doc[0] == '{' }

// TestShapesMatchTheRealAgent compares the stand-in's documents with
// those a Nomad 2.0.6 dev agent answered (testdata/agent-*.json, taken
// with curl from a provider = "nomad" service of a raw_exec job).
func TestShapesMatchTheRealAgent(t *testing.T) {
	s := start(t, "")
	s.Register(api.ServiceRegistration{
		ID: "_nomad-task-a1-srv-probe-http", ServiceName: "probe", NodeID: "n1", Datacenter: "dc1", JobID: "probe",
		AllocID: "a1", Tags: []string{"llmgw", "llmgw-model=m"}, Address: "127.0.0.1", Port: 21260,
	})
	s.SetCheck("a1", Check{Check: "alive", Group: "probe.web[0]", Service: "probe", Status: "success", StatusCode: 200, Task: "srv", Output: "nomad: http ok"})
	s.SetCheck("a1", Check{Check: "ready", Group: "probe.web[0]", Service: "probe", Status: "failure", Mode: "readiness", Task: "srv"})
	for _, tc := range []struct{ path, file string }{
		{"/v1/services", "agent-services.json"},
		{"/v1/service/probe", "agent-service.json"},
		{"/v1/client/allocation/a1/checks", "agent-checks.json"},
	} {
		want, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		resp, got := get(t, s.Addr()+tc.path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if g, w := keys(t, got), keys(t, want); !slices.Equal(g, w) {
			t.Errorf("%s: stand-in keys\n%v\nreal agent's\n%v", tc.path, g, w)
		}
	}
}

func TestErrorsAsNomadAnswersThem(t *testing.T) {
	s := start(t, "")
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/v1/service/nope", 200, "[]\n"},
		{"GET", "/v1/service/", 400, "missing service name\n"},
		{"GET", "/v1/service/x?index=1&wait=bad", 400, "Invalid wait time\n"},
		{"POST", "/v1/services", 405, "Invalid method\n"},
		{"DELETE", "/v1/service/x/nope", 500, "service registration not found\n"},
		{"GET", "/v1/client/allocation/zz/checks", 404, "Unknown allocation \"zz\"\n"},
	} {
		req, _ := http.NewRequest(tc.method, s.Addr()+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || string(b) != tc.body {
			t.Errorf("%s %s: %d %q; want %d %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
	}
}

func TestToken(t *testing.T) {
	s := start(t, "secret")
	if resp, b := get(t, s.Addr()+"/v1/services"); resp.StatusCode != 403 || string(b) != "Permission denied\n" {
		t.Errorf("without token: %d %q", resp.StatusCode, b)
	}
	if resp, _ := get(t, s.Addr()+"/v1/services", "X-Nomad-Token", "secret"); resp.StatusCode != 200 {
		t.Errorf("with token: %d", resp.StatusCode)
	}
}

// TestBlocking: a read at the current index waits for a change of its
// own service, not another's, and then carries the table's index; a
// read below the index answers at once.
func TestBlocking(t *testing.T) {
	s := start(t, "")
	s.Register(api.ServiceRegistration{ID: "a", ServiceName: "vllm", AllocID: "x"})
	resp, _ := get(t, s.Addr()+"/v1/service/vllm")
	idx, _ := strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64)
	if resp.Header.Get("X-Nomad-Knownleader") != "true" || idx == 0 {
		t.Fatalf("headers %v", resp.Header)
	}
	done := make(chan []api.ServiceRegistration, 1)
	go func() {
		_, b := get(t, s.Addr()+"/v1/service/vllm?index="+strconv.FormatUint(idx, 10)+"&wait=1m")
		var regs []api.ServiceRegistration
		_ = json.Unmarshal(b, &regs)
		done <- regs
	}()
	poll.Until(t, "the read to block", func() bool { return s.Waiting() == 1 })
	s.Register(api.ServiceRegistration{ID: "b", ServiceName: "other", AllocID: "y"}) // moves the index, wakes nobody
	select {
	case regs := <-done:
		t.Fatalf("woken by another service: %+v", regs)
	case <-time.After(100 * time.Millisecond): // a negative check: the read must still be waiting
	}
	s.Deregister("a")
	if regs := <-done; len(regs) != 0 {
		t.Errorf("after deregistration: %+v", regs)
	}
	// Below the index: at once, even with a long wait.
	resp, _ = get(t, s.Addr()+"/v1/service/vllm?index=1&wait=10m")
	if got, _ := strconv.ParseUint(resp.Header.Get("X-Nomad-Index"), 10, 64); got != idx+2 {
		t.Errorf("index %d; want %d", got, idx+2)
	}
	// At the index, wait elapses: the same list and index again.
	start := time.Now()
	resp, _ = get(t, s.Addr()+"/v1/service/vllm?index="+resp.Header.Get("X-Nomad-Index")+"&wait=50ms")
	if time.Since(start) < 50*time.Millisecond || resp.StatusCode != 200 {
		t.Errorf("timed-out read: %d after %v", resp.StatusCode, time.Since(start))
	}
}

// TestBlockingListWakesOnAnyService: a blocking read of /v1/services
// watches every registration of its namespace, as Nomad's List does: a
// registration of any service there wakes it, one in another namespace
// does not. Calls counts each endpoint's requests.
func TestBlockingListWakesOnAnyService(t *testing.T) {
	s := start(t, "")
	s.Register(api.ServiceRegistration{ID: "a", ServiceName: "vllm", AllocID: "x"})
	resp, _ := get(t, s.Addr()+"/v1/services")
	idx := resp.Header.Get("X-Nomad-Index")
	done := make(chan []api.ServiceRegistrationListStub, 1)
	go func() {
		_, b := get(t, s.Addr()+"/v1/services?index="+idx+"&wait=1m")
		var stubs []api.ServiceRegistrationListStub
		_ = json.Unmarshal(b, &stubs)
		done <- stubs
	}()
	poll.Until(t, "the list read to block", func() bool { return s.Waiting() == 1 })
	s.Register(api.ServiceRegistration{ID: "c", ServiceName: "vllm", AllocID: "z", Namespace: "other"})
	select {
	case stubs := <-done:
		t.Fatalf("woken by another namespace: %+v", stubs)
	case <-time.After(100 * time.Millisecond): // a negative check: the read must still be waiting
	}
	s.Register(api.ServiceRegistration{ID: "b", ServiceName: "metrics", AllocID: "y"})
	stubs := <-done
	if len(stubs) != 1 || len(stubs[0].Services) != 2 {
		t.Errorf("woken list %+v; want both services of default", stubs)
	}
	get(t, s.Addr()+"/v1/service/vllm")
	get(t, s.Addr()+"/v1/client/allocation/x/checks")
	if got, want := s.Calls(), (Calls{Services: 2, Service: 1, Checks: 1}); got != want || got.Total() != 4 {
		t.Errorf("calls %+v; want %+v", got, want)
	}
}
