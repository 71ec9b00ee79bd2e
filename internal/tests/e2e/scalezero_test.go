package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/otlpsink"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/server"
)

// The tests in this file scale sim-model's job from zero and back: the
// routers call the Nomad stand-in's scale API, and the test plays the
// Nomad client, starting a vllm-sim replica and registering it when the
// job's count goes up, and deregistering it when the count goes to zero.

const (
	zeroJob   = "sim-job"
	zeroGroup = "sim"
	zeroAlloc = "alloc-0/main"
)

// zeroFleet is a nomadFleet with sim-model's job at zero replicas.
type zeroFleet struct {
	*nomadFleet
	changes chan [2]int // each count change, from and to
}

func startZeroFleet(t *testing.T) *zeroFleet {
	t.Helper()
	f := startNomadFleet(t, false)
	z := &zeroFleet{nomadFleet: f, changes: make(chan [2]int, 16)}
	f.catalogue.AddJob("", zeroJob, []string{zeroGroup}, 0)
	f.catalogue.OnScale(func(_, job, group string, from, to int) {
		if job == zeroJob && group == zeroGroup {
			z.changes <- [2]int{from, to}
		}
	})
	return z
}

// nextChange waits for the job's next count change.
func (z *zeroFleet) nextChange(t *testing.T) [2]int {
	t.Helper()
	select {
	case c := <-z.changes:
		return c
	case <-time.After(30 * time.Second):
		t.Fatal("the job's count never changed")
		return [2]int{}
	}
}

// playUp does what a Nomad client does for a count raised from zero: it
// starts the replica, registers its service and reports it healthy.
func (z *zeroFleet) playUp(t *testing.T) {
	t.Helper()
	if c := z.nextChange(t); c != [2]int{0, 1} {
		t.Fatalf("count change %v; want 0 to 1", c)
	}
	z.sims[zeroAlloc] = startSim(t, "--sim-latency=false")
	z.registerReplica(t, zeroAlloc, false)
	z.catalogue.SetHealthy("", zeroJob, zeroGroup, 1)
}

// router starts a router that scales sim-model from zero, with idle as
// its idle timeout, edit's changes and opts.
func (z *zeroFleet) router(t *testing.T, name string, idle time.Duration, edit func(*config.Config), opts ...server.Option) *server.Server {
	t.Helper()
	return z.nomadFleet.router(t, name, func(c *config.Config) {
		c.Nomad.ScaleFromZero = []config.ScaleFromZero{{Model: model, Job: zeroJob, Group: zeroGroup, Count: 1, IdleTimeout: idle}}
		c.Nomad.ColdStartTimeout, c.Nomad.MaxColdQueue = time.Minute, 16
		if edit != nil {
			edit(c)
		}
	}, opts...)
}

// stageLog records the cold-start stages a router reports, with their
// request ids.
type stageLog struct {
	mu  sync.Mutex
	got []string
}

func (l *stageLog) add(ctx context.Context, s admission.Stage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := route.RequestID(ctx) + " " + s.Name
	switch s.Name {
	case "wait":
		e += " " + s.Result
	default:
		if s.Changed {
			e += " changed"
		}
	}
	l.got = append(l.got, e)
}

func (l *stageLog) entries() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// coldAnswer is an answer with the headers a refusal carries.
type coldAnswer struct {
	answer
	retryAfter string
}

func callWithID(t *testing.T, router, id string) coldAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+router+"/v1/completions", strings.NewReader(completion(longPrompt(1), false)))
	if err != nil {
		t.Error(err)
		return coldAnswer{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return coldAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return coldAnswer{answer: answer{code: resp.StatusCode, replica: resp.Header.Get("X-Llmgw-Replica"), body: b}, retryAfter: resp.Header.Get("Retry-After")}
}

// scaleState reads the status page's scale-from-zero line of sim-model.
func scaleState(t *testing.T, r *server.Server) string {
	t.Helper()
	resp, err := http.Get("http://" + r.AdminAddr() + server.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(b), "Scale from zero: ")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(rest, "</li>")
	return line
}

// get is the status of a GET of url.
func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func isState(state string) func(string) bool {
	return func(line string) bool { return strings.Contains(line, `data-scale="`+state+`"`) }
}

// TestScaleFromZeroAnswersOnceAReplicaIsUp: a request for a model at zero
// is held while the router scales its job (once), and answered by the
// replica that comes up; its stages are reported with its request id,
// and the status page goes from cold through starting to warm.
func TestScaleFromZeroAnswersOnceAReplicaIsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	z := startZeroFleet(t)
	sink := otlpsink.Start(t)
	var stages stageLog
	r := z.router(t, "router-1", 0, func(c *config.Config) {
		c.Tracing = config.Tracing{Endpoint: sink.Endpoint(), SampleRatio: 1}
	}, server.WithColdStage(stages.add))
	if line := scaleState(t, r); !isState("cold")(line) {
		t.Fatalf("status before: %q; want cold", line)
	}
	// A router whose model is at zero is ready and lists it: a request is
	// what starts it.
	poll.Until(t, "the router to be ready", func() bool { return get(t, "http://"+r.Addr()+"/ready") == http.StatusOK })
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp, err := http.Get("http://" + r.Addr() + "/v1/models"); err != nil {
		t.Fatal(err)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&models)
		resp.Body.Close()
		if err != nil || len(models.Data) != 1 || models.Data[0].ID != model {
			t.Fatalf("/v1/models at zero: %+v %v; want %s", models, err, model)
		}
	}
	done := make(chan coldAnswer, 1)
	go func() { done <- callWithID(t, r.Addr(), "req-cold-1") }()
	poll.Until(t, "the request to wait on a starting model", func() bool {
		line := scaleState(t, r)
		return isState("starting")(line) && strings.Contains(line, "<b>1</b> waiting")
	})
	z.playUp(t)
	a := <-done
	if a.code != http.StatusOK || a.replica != zeroAlloc {
		t.Fatalf("held request: %d from %q %s; want 200 from %s", a.code, a.replica, a.body, zeroAlloc)
	}
	if n, calls := z.catalogue.Count("", zeroJob, zeroGroup), z.catalogue.Calls(); n != 1 || calls.Scale != 1 {
		t.Fatalf("count %d after %d scale calls; want 1 after 1", n, calls.Scale)
	}
	if got, want := strings.Join(stages.entries(), ", "), "req-cold-1 scale changed, req-cold-1 wait ready"; got != want {
		t.Fatalf("stages %q; want %q", got, want)
	}
	if line := scaleState(t, r); !isState("warm")(line) {
		t.Fatalf("status after: %q; want warm", line)
	}
	if a := callWithID(t, r.Addr(), "req-warm"); a.code != http.StatusOK || len(stages.entries()) != 2 {
		t.Fatalf("a request to the warm model: %d, stages %v; want 200 and no new stage", a.code, stages.entries())
	}
	r.Close() // flushes the spans
	checkColdSpans(t, sink.Spans())
}

// checkColdSpans: the held request's trace holds the scale-up call and
// the wait, each under its decision's span; the warm request's has none.
func checkColdSpans(t *testing.T, spans []otlpsink.Span) {
	t.Helper()
	byName := map[string][]otlpsink.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	routes, scale, wait := byName["llmgw.route"], byName[server.SpanColdPrefix+"scale"], byName[server.SpanColdPrefix+"wait"]
	if len(routes) != 2 || len(scale) != 1 || len(wait) != 1 {
		t.Fatalf("%d route, %d scale and %d wait spans; want 2, 1 and 1 (of %d spans)", len(routes), len(scale), len(wait), len(spans))
	}
	var held otlpsink.Span
	for _, s := range routes {
		if s.TraceID == wait[0].TraceID {
			held = s
		}
	}
	for _, c := range []struct {
		s         otlpsink.Span
		key, want any
	}{
		{scale[0], "llmgw.cold_start.changed", true},
		{wait[0], "llmgw.cold_start.result", "ready"},
	} {
		if c.s.TraceID != held.TraceID || c.s.ParentSpanID != held.SpanID || c.s.Attrs[c.key.(string)] != c.want || c.s.Attrs["gen_ai.request.model"] != model {
			t.Errorf("span %s %+v; want it under the held request's decision span %s with %v = %v", c.s.Name, c.s, held.SpanID, c.key, c.want)
		}
	}
}

// TestScaleFromZeroOnceAcrossRouters: requests held on two routers at
// once cause one scale-up, and all are answered by its replica.
func TestScaleFromZeroOnceAcrossRouters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	z := startZeroFleet(t)
	routers := []*server.Server{z.router(t, "router-1", 0, nil), z.router(t, "router-2", 0, nil)}
	const each = 3
	done := make(chan coldAnswer, 2*each)
	for _, r := range routers {
		for range each {
			go func() { done <- callWithID(t, r.Addr(), "") }()
		}
	}
	for _, r := range routers {
		poll.Until(t, "every request to wait", func() bool { return strings.Contains(scaleState(t, r), "<b>3</b> waiting") })
	}
	z.playUp(t)
	for range 2 * each {
		if a := <-done; a.code != http.StatusOK || a.replica != zeroAlloc {
			t.Fatalf("held request: %d from %q %s", a.code, a.replica, a.body)
		}
	}
	if n, extra := z.catalogue.Count("", zeroJob, zeroGroup), len(z.changes); n != 1 || extra != 0 {
		t.Fatalf("count %d, %d more count changes; want 1 and none: one scale-up", n, extra)
	}
}

// TestScaleToZeroWhenIdle: a model with no request for its idle time is
// scaled back to zero, once, and shows cold again.
func TestScaleToZeroWhenIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	z := startZeroFleet(t)
	r := z.router(t, "router-1", time.Second, nil)
	done := make(chan coldAnswer, 1)
	go func() { done <- callWithID(t, r.Addr(), "") }()
	z.playUp(t)
	if a := <-done; a.code != http.StatusOK {
		t.Fatalf("held request: %d %s", a.code, a.body)
	}
	if c := z.nextChange(t); c != [2]int{1, 0} {
		t.Fatalf("count change %v; want 1 to 0", c)
	}
	if !z.catalogue.Deregister(nomadServiceID(zeroAlloc)) { // the client stops the allocation
		t.Fatal("nothing deregistered")
	}
	poll.Until(t, "the model to show cold", func() bool { return isState("cold")(scaleState(t, r)) })
	if n, extra := z.catalogue.Count("", zeroJob, zeroGroup), len(z.changes); n != 0 || extra != 0 {
		t.Fatalf("count %d, %d more changes; want 0 and none", n, extra)
	}
}

// TestScaleFromZeroBounds: past the model's hold the router answers 429,
// and a request whose replica does not come in time 503, each with
// Retry-After, in OpenAI's error shape.
func TestScaleFromZeroBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	z := startZeroFleet(t)
	r := z.router(t, "router-1", 0, func(c *config.Config) {
		c.Nomad.ColdStartTimeout, c.Nomad.MaxColdQueue = 2*time.Second, 1
	})
	done := make(chan coldAnswer, 1)
	go func() { done <- callWithID(t, r.Addr(), "") }()
	poll.Until(t, "one request to wait", func() bool { return strings.Contains(scaleState(t, r), "<b>1</b> waiting") })
	full := callWithID(t, r.Addr(), "")
	late := <-done // no replica comes: the test leaves the count change unplayed
	for _, tc := range []struct {
		name  string
		a     coldAnswer
		code  int
		etype string
	}{
		{"full", full, http.StatusTooManyRequests, "rate_limit_error"},
		{"timed out", late, http.StatusServiceUnavailable, "service_unavailable"},
	} {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    int    `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(tc.a.body, &body); err != nil || tc.a.code != tc.code || tc.a.retryAfter == "" ||
			body.Error.Type != tc.etype || body.Error.Code != tc.code || !strings.Contains(body.Error.Message, model+" is starting") {
			t.Errorf("%s: %d Retry-After %q %s (%v); want %d with Retry-After, type %s", tc.name, tc.a.code, tc.a.retryAfter, tc.a.body, err, tc.code, tc.etype)
		}
	}
	if c := z.nextChange(t); c != [2]int{0, 1} || len(z.changes) != 0 {
		t.Fatalf("count changes %v then %d more; want one, 0 to 1", c, len(z.changes))
	}
}
