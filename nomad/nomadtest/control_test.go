package nomadtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// controlServer serves the API and its control endpoints on one listener,
// as cmd/nomad-standin does.
func controlServer(t *testing.T, token string) (*Server, string) {
	t.Helper()
	s := New(token)
	mux := http.NewServeMux()
	mux.Handle(ControlPrefix, s.Control())
	mux.Handle("/", s)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func send(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestControlRegistersWhatTheAPIServes: a registration, a check and a
// deregistration made over the control endpoints show in the API's reads
// as the in-process calls do.
func TestControlRegistersWhatTheAPIServes(t *testing.T) {
	_, base := controlServer(t, "")
	reg := `{"ID":"_nomad-task-a1-sim-vllm-http","ServiceName":"vllm","AllocID":"a1","Address":"127.0.0.1","Port":8000,"Tags":["llmgw","llmgw-model=m"]}`
	if code, body := send(t, http.MethodPut, base+"/_standin/registrations", reg); code != http.StatusNoContent {
		t.Fatalf("register: %d %s", code, body)
	}
	resp, body := get(t, base+"/v1/service/vllm")
	var regs []api.ServiceRegistration
	if err := json.Unmarshal(body, &regs); err != nil || len(regs) != 1 || regs[0].Port != 8000 || regs[0].Namespace != "default" ||
		resp.Header.Get("X-Nomad-Index") == "" {
		t.Fatalf("read after register: %v %s (index %q); want one registration in namespace default", err, body, resp.Header.Get("X-Nomad-Index"))
	}
	check := `{"Check":"health","Service":"vllm","Status":"success","Group":"demo.sim[0]"}`
	if code, body := send(t, http.MethodPut, base+"/_standin/checks/a1", check); code != http.StatusNoContent {
		t.Fatalf("set check: %d %s", code, body)
	}
	_, body = get(t, base+"/v1/client/allocation/a1/checks")
	var checks map[string]Check
	if err := json.Unmarshal(body, &checks); err != nil || checks["vllm/health"].Status != "success" {
		t.Fatalf("checks %s (%v); want vllm/health success", body, err)
	}
	if code, body := send(t, http.MethodDelete, base+"/_standin/registrations/_nomad-task-a1-sim-vllm-http", ""); code != http.StatusNoContent {
		t.Fatalf("deregister: %d %s", code, body)
	}
	if _, body = get(t, base+"/v1/service/vllm"); strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("read after deregister: %s; want []", body)
	}
}

// TestControlRejectsBadRequests: each malformed control request is
// refused with a status and a message naming the problem, and changes
// nothing.
func TestControlRejectsBadRequests(t *testing.T) {
	s, base := controlServer(t, "sekret")
	tok := []string{"X-Nomad-Token", "sekret"}
	for _, c := range []struct {
		name, method, path, body string
		hdr                      []string
		code                     int
		msg                      string
	}{
		{"no token", http.MethodPut, "registrations", `{"ID":"x","ServiceName":"s","AllocID":"a"}`, nil, 403, "Permission denied"},
		{"not JSON", http.MethodPut, "registrations", `{"ID":`, tok, 400, "bad registrations body"},
		{"unknown field", http.MethodPut, "registrations", `{"ID":"x","ServiceName":"s","AllocID":"a","Nmae":"y"}`, tok, 400, "unknown field"},
		{"no ID", http.MethodPut, "registrations", `{"ServiceName":"s","AllocID":"a"}`, tok, 400, "needs ID, ServiceName and AllocID"},
		{"too large", http.MethodPut, "registrations", `{"ID":"` + strings.Repeat("x", maxControlBody) + `"}`, tok, 400, "too large"},
		{"check without status", http.MethodPut, "checks/a", `{"Service":"s"}`, tok, 400, "needs Service and Status"},
		{"unknown registration", http.MethodDelete, "registrations/nope", "", tok, 404, `registration "nope" not found`},
		{"wrong method", http.MethodGet, "registrations", "", tok, 405, "want PUT"},
		{"unknown endpoint", http.MethodPut, "allocations", "{}", tok, 404, "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := send(t, c.method, base+ControlPrefix+c.path, c.body, c.hdr...)
			if code != c.code || !strings.Contains(body, c.msg) {
				t.Errorf("%s %s: %d %q; want %d naming %q", c.method, c.path, code, body, c.code, c.msg)
			}
		})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.regs) != 0 || len(s.checks) != 0 || s.index != 1 {
		t.Errorf("refused requests changed the state: %d registrations, %d checks, index %d", len(s.regs), len(s.checks), s.index)
	}
}

// TestControlDeregistersEscapedIDs: an id is path-escaped once by the
// client (url.PathEscape), so "%" and "/" in it name that registration,
// not another one.
func TestControlDeregistersEscapedIDs(t *testing.T) {
	_, base := controlServer(t, "")
	for _, id := range []string{"svc-100%25-a", "svc/with/slash", "svc%"} {
		reg, _ := json.Marshal(api.ServiceRegistration{ID: id, ServiceName: "vllm", AllocID: "a1", Address: "127.0.0.1", Port: 8000})
		if code, body := send(t, http.MethodPut, base+"/_standin/registrations", string(reg)); code != http.StatusNoContent {
			t.Fatalf("register %q: %d %s", id, code, body)
		}
		if code, body := send(t, http.MethodDelete, base+"/_standin/registrations/"+url.PathEscape(id), ""); code != http.StatusNoContent {
			t.Errorf("deregister %q: %d %s", id, code, body)
		}
	}
}

// TestControlJobs: a job added over the control endpoints is what the job
// API serves, scales like one added in process, and takes its health.
func TestControlJobs(t *testing.T) {
	s, base := controlServer(t, "tok")
	tok := []string{"X-Nomad-Token", "tok"}
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"PUT", "/_standin/jobs", `{"ID":"sim-job","Groups":[{"Name":"sim","Count":0}]}`, 204},
		{"PUT", "/_standin/jobs", `{"ID":"","Groups":[]}`, 400},
		{"GET", "/_standin/jobs", ``, 405},
		{"PUT", "/_standin/jobs/sim-job", `{}`, 405},
		{"POST", "/v1/job/sim-job/scale", `{"Count":1,"Target":{"Group":"sim"}}`, 200},
		{"PUT", "/_standin/jobs/sim-job/healthy", `{"Group":"sim","Healthy":1}`, 204},
		{"PUT", "/_standin/jobs/sim-job/healthy", `{"Group":"nope","Healthy":1}`, 404},
		{"PUT", "/_standin/jobs/nope/healthy", `{"Group":"sim","Healthy":1}`, 404},
	} {
		if code, body := send(t, tc.method, base+tc.path, tc.body, tok...); code != tc.code {
			t.Errorf("%s %s: %d %s; want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
	code, body := send(t, "GET", base+"/v1/job/sim-job/scale", "", tok...)
	var st api.JobScaleStatusResponse
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || st.TaskGroups["sim"].Desired != 1 || st.TaskGroups["sim"].Healthy != 1 {
		t.Fatalf("status: %d %s", code, body)
	}
	if s.Count("", "sim-job", "sim") != 1 {
		t.Fatal("count")
	}
}
