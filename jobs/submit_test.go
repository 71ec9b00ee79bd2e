package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// fakeNomad answers the agent endpoints Submit uses, from Nomad's own API
// types, since a Nomad agent cannot be built here. Evaluations and
// deployments step through the given states, one per query.
type fakeNomad struct {
	mu          sync.Mutex
	requests    []string
	parsed      string // the JobHCL the agent was asked to parse
	vars        string // the Variables sent with it
	evals       []api.Evaluation
	deployments []api.Deployment
	index       uint64
}

func (f *fakeNomad) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	f.index++
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(f.index, 10))
	next := func(states any) any {
		switch s := states.(type) {
		case *[]api.Evaluation:
			e := (*s)[0]
			if len(*s) > 1 {
				*s = (*s)[1:]
			}
			return e
		case *[]api.Deployment:
			d := (*s)[0]
			if len(*s) > 1 {
				*s = (*s)[1:]
			}
			return d
		}
		return nil
	}
	var out any
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/v1/jobs/parse":
		var req api.JobsParseRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.parsed = req.JobHCL
		f.vars = req.Variables
		id, typ := "llama-3.1-8b", "service"
		out = api.Job{ID: &id, Name: &id, Type: &typ}
	case r.Method == http.MethodPut && r.URL.Path == "/v1/jobs":
		out = api.JobRegisterResponse{EvalID: "eval-1", JobModifyIndex: f.index}
	case r.Method == http.MethodGet && r.URL.Path == "/v1/evaluation/eval-1":
		out = next(&f.evals)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/deployment/deploy-1234567":
		out = next(&f.deployments)
	default:
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(out)
}

func deployment(status string, healthy, unhealthy int) api.Deployment {
	return api.Deployment{ID: "deploy-1234567", Status: status, StatusDescription: "Deployment " + status,
		TaskGroups: map[string]*api.DeploymentState{"engine": {DesiredTotal: 2, HealthyAllocs: healthy, UnhealthyAllocs: unhealthy}}}
}

func TestSubmit(t *testing.T) {
	complete := api.Evaluation{ID: "eval-1", Status: "complete", DeploymentID: "deploy-1234567"}
	tests := []struct {
		name        string
		file        string
		evals       []api.Evaluation
		deployments []api.Deployment
		wantErr     string   // "" for success
		wantLines   []string // in progress output
		wantNoCalls bool
	}{
		{
			name:  "deployment succeeds",
			file:  "llama-3.1-8b.nomad.hcl",
			evals: []api.Evaluation{{ID: "eval-1", Status: "pending"}, complete},
			deployments: []api.Deployment{deployment("running", 0, 0), deployment("running", 0, 0),
				deployment("running", 1, 0), deployment("successful", 2, 0)},
			wantLines: []string{
				"job llama-3.1-8b registered, evaluation eval-1",
				"deployment deploy-1: running; engine 0/2 healthy",
				"deployment deploy-1: running; engine 1/2 healthy",
				"deployment deploy-1: successful; engine 2/2 healthy",
			},
		},
		{
			name:        "deployment fails",
			file:        "llama-3.1-8b.nomad.hcl",
			evals:       []api.Evaluation{complete},
			deployments: []api.Deployment{deployment("running", 0, 1), deployment("failed", 0, 2)},
			wantErr:     "deployment deploy-1234567 failed: Deployment failed",
			wantLines:   []string{"deployment deploy-1: failed; engine 0/2 healthy, 2 unhealthy"},
		},
		{
			name: "no GPUs free",
			file: "llama-3.1-8b.nomad.hcl",
			evals: []api.Evaluation{{ID: "eval-1", Status: "complete", DeploymentID: "deploy-1234567",
				FailedTGAllocs: map[string]*api.AllocationMetric{"engine": {NodesEvaluated: 3, DimensionExhausted: map[string]int{"devices: nvidia/gpu": 3}}}}},
			deployments: []api.Deployment{deployment("successful", 2, 0)},
			wantLines:   []string{"group engine: placement failed: devices: nvidia/gpu (3 nodes)"},
		},
		{
			name:    "evaluation fails",
			file:    "llama-3.1-8b.nomad.hcl",
			evals:   []api.Evaluation{{ID: "eval-1", Status: "failed", StatusDescription: "maximum attempts reached"}},
			wantErr: "evaluation eval-1 failed: maximum attempts reached",
		},
		{
			name:        "invalid jobspec never reaches Nomad",
			file:        "testdata/missing-tag.nomad.hcl",
			wantErr:     `testdata/missing-tag.nomad.hcl:19:9: task "vllm": service "vllm": tags must include "llmgw"`,
			wantNoCalls: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeNomad{evals: tt.evals, deployments: tt.deployments}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			client, err := api.NewClient(&api.Config{Address: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			var progress bytes.Buffer
			err = Submit(context.Background(), client, tt.file, &progress)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v; want success (progress %q)", err, progress.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v; want an error containing %q", err, tt.wantErr)
			}
			for _, want := range tt.wantLines {
				if !strings.Contains(progress.String(), want+"\n") {
					t.Errorf("progress lacks %q:\n%s", want, progress.String())
				}
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if tt.wantNoCalls {
				if len(fake.requests) != 0 {
					t.Errorf("Nomad got %v; want no requests for an invalid jobspec", fake.requests)
				}
				return
			}
			if !strings.HasPrefix(fake.parsed, "# Llama 3.1 8B") {
				t.Errorf("the agent parsed %.40q; want the jobspec's source", fake.parsed)
			}
			if len(fake.requests) < 3 || fake.requests[0] != "PUT /v1/jobs/parse" || fake.requests[1] != "PUT /v1/jobs" {
				t.Errorf("requests %v; want parse, then register, then follow", fake.requests)
			}
		})
	}
}

// TestSubmitVars checks that -var values reach the agent's parser, which
// alone resolves a jobspec's input variables.
func TestSubmitVars(t *testing.T) {
	t.Parallel()
	fake := &fakeNomad{evals: []api.Evaluation{{ID: "eval-1", Status: "complete"}}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := api.NewClient(&api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := VarFile([]string{"routers=1", "http_port=18080"})
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	if err := SubmitVars(context.Background(), client, "llmgw-router.nomad.hcl", vars, &progress); err != nil {
		t.Fatalf("%v (progress %q)", err, progress.String())
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if got := roundTrip(t, fake.vars); got["routers"] != "1" || got["http_port"] != "18080" || len(got) != 2 {
		t.Errorf("the agent got variables %q; want routers and http_port", fake.vars)
	}
}
