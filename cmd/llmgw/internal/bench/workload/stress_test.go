package workload

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestManySessions(t *testing.T) {
	o := DefaultSessionOptions()
	w, err := ManySessions(o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "many-session" || len(w.Requests) != 256*4 {
		t.Fatalf("%s: %d requests; want many-session, 1024", w.Name, len(w.Requests))
	}
	groups := map[string]bool{}
	total := 0
	for _, r := range w.Requests {
		groups[r.Group] = true
		for _, m := range r.Messages {
			total += len(m.Content) / tokenBytes
		}
	}
	if len(groups) != 256 {
		t.Errorf("%d sessions; want 256", len(groups))
	}
	// The last round of each session resends system, document, 4
	// questions and 3 answers: 200 + 2000 + 4x80 + 3x24 = 2,592 tokens.
	last := w.Requests[len(w.Requests)-1]
	n := 0
	for _, m := range last.Messages {
		n += len(m.Content) / tokenBytes
	}
	if n != 2592 {
		t.Errorf("a last round carries %d tokens; want 2592", n)
	}
	if total < 500_000 {
		t.Errorf("%d prompt tokens in all; want the histories to exceed half a million", total)
	}
	again, _ := ManySessions(o)
	if !reflect.DeepEqual(w, again) {
		t.Error("the same seed gave different workloads")
	}
}

func TestFanOut(t *testing.T) {
	o := DefaultFanOutOptions()
	w, err := FanOut(o)
	if err != nil {
		t.Fatal(err)
	}
	bursts := map[string][]Request{}
	var order []string
	for _, r := range w.Requests {
		if _, ok := bursts[r.Group]; !ok {
			order = append(order, r.Group)
		}
		bursts[r.Group] = append(bursts[r.Group], r)
	}
	if len(order) != 12 {
		t.Fatalf("%d bursts; want 12", len(order))
	}
	var context string
	for b, g := range order {
		sib := bursts[g]
		if len(sib) < 8 || len(sib) > 32 {
			t.Errorf("%s has %d siblings; want 8-32", g, len(sib))
		}
		// Every sibling starts with the context, which grows by 200
		// tokens a step; siblings arrive together and differ in their task.
		ctx := sib[0].Prompt[:len(sib[0].Prompt)-60*tokenBytes]
		if len(ctx) != (3000+200*b)*tokenBytes || !strings.HasPrefix(ctx, context) {
			t.Errorf("%s: context of %d tokens not extending the last; want %d", g, len(ctx)/tokenBytes, 3000+200*b)
		}
		context = ctx
		for _, r := range sib[1:] {
			if r.At != sib[0].At || !strings.HasPrefix(r.Prompt, ctx) || r.Prompt == sib[0].Prompt {
				t.Errorf("%s: sibling %d does not arrive with the first, share its context and differ in its task", g, r.ID)
			}
		}
	}
	again, _ := FanOut(o)
	if !reflect.DeepEqual(w, again) {
		t.Error("the same seed gave different workloads")
	}
	other := o
	other.Seed = 2
	if w2, _ := FanOut(other); reflect.DeepEqual(w, w2) {
		t.Error("another seed gave the same workload")
	}
}

// TestFanOutAgents: with several agents the bursts take turns, each
// agent's siblings share that agent's context (growing with its own
// bursts) and no two agents share one; a single agent is the workload
// TestFanOut checks, drawn as before.
func TestFanOutAgents(t *testing.T) {
	o := DefaultFanOutOptions()
	one, _ := FanOut(o)
	o.Agents = 1
	if again, _ := FanOut(o); !reflect.DeepEqual(one, again) {
		t.Error("one agent gave another workload than the default")
	}
	o.Agents = 3
	w, err := FanOut(o)
	if err != nil {
		t.Fatal(err)
	}
	contexts := map[string]string{} // agent -> its context at its last burst
	grown := map[string]int{}       // agent -> its bursts so far
	seen := map[string]bool{}
	b := 0
	for _, r := range w.Requests {
		if seen[r.Group] {
			continue
		}
		seen[r.Group] = true
		agent := fmt.Sprintf("agent-%d", b%3)
		if want := fmt.Sprintf("%s-burst-%d", agent, b); r.Group != want {
			t.Fatalf("burst %d is %s; want %s", b, r.Group, want)
		}
		ctx := r.Prompt[:len(r.Prompt)-60*tokenBytes]
		if len(ctx) != (3000+200*grown[agent])*tokenBytes || !strings.HasPrefix(ctx, contexts[agent]) {
			t.Errorf("%s: a context of %d tokens not extending its agent's last; want %d", r.Group, len(ctx)/tokenBytes, 3000+200*grown[agent])
		}
		contexts[agent] = ctx
		grown[agent]++
		b++
	}
	if len(contexts) != 3 {
		t.Fatalf("%d agents; want 3", len(contexts))
	}
	for a, ca := range contexts {
		for c, cc := range contexts {
			if a < c && ca[:100*tokenBytes] == cc[:100*tokenBytes] {
				t.Errorf("%s and %s share the start of their contexts", a, c)
			}
		}
	}
	o.Agents = maxAgents + 1
	if _, err := FanOut(o); err == nil || !strings.Contains(err.Error(), "agents") {
		t.Errorf("%d agents: error %v; want one naming the agents", o.Agents, err)
	}
}

func TestMixedTenants(t *testing.T) {
	o := DefaultTenantOptions()
	w, err := MixedTenants(o)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	system := map[string]string{}
	for _, r := range w.Requests {
		count[r.Group]++
		if r.Group == "unique" {
			if len(r.Prompt) != 800*tokenBytes {
				t.Errorf("unique prompt %d has %d tokens; want 800", r.ID, len(r.Prompt)/tokenBytes)
			}
			continue
		}
		s := r.Prompt[:3000*tokenBytes]
		if prev, ok := system[r.Group]; ok && prev != s {
			t.Errorf("%s: request %d has another system prompt", r.Group, r.ID)
		}
		system[r.Group] = s
	}
	if len(system) != 3 {
		t.Fatalf("%d tenants; want 3", len(system))
	}
	// Shared traffic splits 1 : 1/2 : 1/3, i.e. 6/11, 3/11, 2/11 of about
	// 120 requests: tenant 0 is hot.
	if !(count["tenant-0"] > count["tenant-1"] && count["tenant-1"] > count["tenant-2"]) {
		t.Errorf("tenant counts %v; want tenant-0 > tenant-1 > tenant-2", count)
	}
	if u := count["unique"]; u < 90 || u > 150 {
		t.Errorf("%d unique prompts of 240; want about half", u)
	}
	again, _ := MixedTenants(o)
	if !reflect.DeepEqual(w, again) {
		t.Error("the same seed gave different workloads")
	}
}

func TestStressBadOptions(t *testing.T) {
	if _, err := ManySessions(SessionOptions{}); err == nil {
		t.Error("many-session without sessions accepted")
	}
	f := DefaultFanOutOptions()
	f.MinFanOut, f.MaxFanOut = 9, 8
	if _, err := FanOut(f); err == nil {
		t.Error("fan-out with min > max accepted")
	}
	m := DefaultTenantOptions()
	m.SharedShare = 1.5
	if _, err := MixedTenants(m); err == nil {
		t.Error("a shared share of 1.5 accepted")
	}
}
