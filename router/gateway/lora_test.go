package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/route"
)

// namedBackends start n backends answering with their own name.
func namedBackends(t *testing.T, n int) []string {
	var out []string
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		out = append(out, backend(t, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"served_by":%q}`, name)
		}))
	}
	return out
}

// TestLoRARouting: a request naming an adapter goes only to replicas whose
// listing has it, /v1/models lists it with its base model as parent, and an
// adapter nobody serves is an unknown model.
func TestLoRARouting(t *testing.T) {
	h := newHarness(t, 1<<20, namedBackends(t, 3)...)
	h.set.SetAdapters("r1", []string{"sql"})
	h.set.SetAdapters("r2", []string{"sql", "chat"})
	served := map[string]int{}
	for i := range 20 {
		body := fmt.Sprintf(`{"model":"sql","prompt":"select %d rows from a table please"}`, i)
		resp, b := post(t, h.srv.URL+"/v1/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		served[resp.Header.Get(HeaderReplica)]++
	}
	if served["r0"] != 0 || served["r1"] == 0 || served["r2"] == 0 {
		t.Errorf("adapter requests served %v; want r1 and r2 only, both used", served)
	}
	if resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"math","prompt":"x"}`); resp.StatusCode != 404 {
		t.Errorf("unserved adapter: status %d (%s); want 404", resp.StatusCode, b)
	}

	resp, err := http.Get(h.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range list.Data {
		p := "<null>"
		if m.Parent != nil {
			p = *m.Parent
		}
		got[m.ID] = p
	}
	if d := cmp.Diff(map[string]string{"m": "<null>", "sql": "m", "chat": "m"}, got); d != "" {
		t.Errorf("/v1/models (-want +got):\n%s", d)
	}
}

// TestDrainingReplica: a draining replica gets no new requests and the
// admin listing says so; once it passes again it is used again.
func TestDrainingReplica(t *testing.T) {
	addrs := namedBackends(t, 2)
	h := newHarness(t, 1<<20, addrs...)
	list := func(draining bool) []replicas.Replica {
		return []replicas.Replica{
			{ID: "r0", Model: "m", Address: addrs[0], BlockSize: 16, Health: "warning", Draining: draining},
			{ID: "r1", Model: "m", Address: addrs[1], BlockSize: 16, Health: "passing"},
		}
	}
	h.set.Replace(list(true))
	served := func() map[string]int {
		out := map[string]int{}
		for i := range 30 { // ties are broken at random: r0 misses all 30 with p = 1e-9
			resp, b := post(t, h.srv.URL+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"question %d"}`, i))
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			out[resp.Header.Get(HeaderReplica)]++
		}
		return out
	}
	if got := served(); got["r0"] != 0 {
		t.Errorf("draining r0 served %v", got)
	}
	resp, err := http.Get(h.admin.URL + "/admin/replicas")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var admin struct {
		Replicas []route.ReplicaState `json:"replicas"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&admin); err != nil {
		t.Fatal(err)
	}
	if r := admin.Replicas[0]; r.ID != "r0" || !r.Draining || r.Health != "warning" {
		t.Errorf("admin r0 = %+v; want draining with health warning", r)
	}
	if admin.Replicas[1].Draining {
		t.Errorf("admin r1 draining")
	}
	h.set.Replace(list(false))
	if got := served(); got["r0"] == 0 {
		t.Errorf("r0 unused after it passed again: %v", got)
	}
}
