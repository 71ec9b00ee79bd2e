package nomadtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// ControlPrefix is where Control serves. Nomad has no such paths; they
// stand for what a Nomad client does on its own (register a task's
// services, run its checks), so a process other than the test's can play
// that part: `llmgw demo -discovery nomad` runs the stand-in as
// cmd/nomad-standin and registers its shards over these endpoints.
const ControlPrefix = "/_standin/"

// maxControlBody bounds a control request's body.
const maxControlBody = 1 << 20

// Control serves Register, Deregister, SetCheck, AddJob and SetHealthy
// over HTTP:
//
//	PUT    /_standin/registrations        body: api.ServiceRegistration
//	DELETE /_standin/registrations/:id    404 when id is not registered
//	PUT    /_standin/checks/:alloc_id     body: Check
//	PUT    /_standin/jobs                 body: ControlJob (AddJob)
//	PUT    /_standin/jobs/:job_id/healthy body: ControlHealthy (SetHealthy)
//
// Each answers 204 on success and a plain-text error naming the problem
// otherwise. It takes the Server's token as the API does.
func (s *Server) Control() http.Handler {
	return http.HandlerFunc(s.control)
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	if s.token != "" && r.Header.Get("X-Nomad-Token") != s.token {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	// The escaped path: an id's own "/" and "%" arrive escaped, once.
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), ControlPrefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	kind, arg, _ := strings.Cut(rest, "/")
	arg, err := url.PathUnescape(arg)
	if err != nil {
		http.Error(w, fmt.Sprintf("bad path %q: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	switch {
	case kind == "registrations" && arg == "" && r.Method == http.MethodPut:
		var reg api.ServiceRegistration
		if !decodeControl(w, r, &reg) {
			return
		}
		if reg.ID == "" || reg.ServiceName == "" || reg.AllocID == "" {
			http.Error(w, "registration needs ID, ServiceName and AllocID", http.StatusBadRequest)
			return
		}
		s.Register(reg)
	case kind == "registrations" && arg != "" && r.Method == http.MethodDelete:
		if !s.Deregister(arg) {
			http.Error(w, fmt.Sprintf("registration %q not found", arg), http.StatusNotFound)
			return
		}
	case kind == "checks" && arg != "" && r.Method == http.MethodPut:
		var c Check
		if !decodeControl(w, r, &c) {
			return
		}
		if c.Service == "" || c.Status == "" {
			http.Error(w, "check needs Service and Status", http.StatusBadRequest)
			return
		}
		s.SetCheck(arg, c)
	case kind == "jobs":
		if !s.controlJobs(w, r, arg) {
			return
		}
	case kind == "registrations" || kind == "checks":
		http.Error(w, fmt.Sprintf("%s %s: want PUT %[3]sregistrations, DELETE %[3]sregistrations/:id or PUT %[3]schecks/:alloc_id",
			r.Method, r.URL.Path, ControlPrefix), http.StatusMethodNotAllowed)
		return
	default:
		http.NotFound(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// decodeControl reads one JSON value into v, answering 400 when the body
// is not one, or over maxControlBody.
func decodeControl(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, fmt.Sprintf("bad %s body: %v", strings.TrimPrefix(r.URL.Path, ControlPrefix), err), http.StatusBadRequest)
		return false
	}
	return true
}

// ControlJob is the body of PUT /_standin/jobs: a job with its groups'
// counts, in order. A process playing the Nomad client reads the counts
// back from GET /v1/job/:job_id.
type ControlJob struct {
	Namespace, ID string
	Groups        []ControlGroup
}

// ControlGroup is one group of a ControlJob.
type ControlGroup struct {
	Name  string
	Count int
}

// ControlHealthy is the body of PUT /_standin/jobs/:job_id/healthy.
type ControlHealthy struct {
	Namespace, Group string
	Healthy          int
}

// controlJobs serves the jobs' control paths; arg is what follows
// "jobs/". It reports whether it succeeded, having answered otherwise.
func (s *Server) controlJobs(w http.ResponseWriter, r *http.Request, arg string) bool {
	id, healthy := strings.CutSuffix(arg, "/healthy")
	switch {
	case r.Method != http.MethodPut || arg != "" && !healthy || healthy && id == "":
		http.Error(w, fmt.Sprintf("%s %s: want PUT %[3]sjobs or PUT %[3]sjobs/:job_id/healthy", r.Method, r.URL.Path, ControlPrefix), http.StatusMethodNotAllowed)
		return false
	case healthy:
		var h ControlHealthy
		if !decodeControl(w, r, &h) {
			return false
		}
		if !s.SetHealthy(h.Namespace, id, h.Group, h.Healthy) {
			http.Error(w, fmt.Sprintf("job %q has no group %q", id, h.Group), http.StatusNotFound)
			return false
		}
	default:
		var j ControlJob
		if !decodeControl(w, r, &j) {
			return false
		}
		if j.ID == "" || len(j.Groups) == 0 {
			http.Error(w, "job needs ID and Groups", http.StatusBadRequest)
			return false
		}
		names, counts := make([]string, len(j.Groups)), make([]int, len(j.Groups))
		for i, g := range j.Groups {
			names[i], counts[i] = g.Name, g.Count
		}
		s.AddJob(j.Namespace, j.ID, names, counts...)
	}
	return true
}
