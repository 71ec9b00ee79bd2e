package nomadtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// The job endpoints llmgw's scale-from-zero uses (router/coldstart and
// nomad.Scaler):
//
//	GET      /v1/job/:job_id         the job: its indexes and groups' counts
//	GET      /v1/job/:job_id/scale   api.JobScaleStatusResponse
//	PUT|POST /v1/job/:job_id/scale   body api.ScalingRequest; api.JobRegisterResponse
//
// They follow Nomad's Job.Scale and Job.ScaleStatus (nomad/job_endpoint.go,
// command/agent/job_endpoint.go) as a Nomad 2.0.6 dev agent answered them
// (2026-12-05): the validation order and messages; a JobModifyIndex that
// is not the job's answered 500 "Enforcing job modify index N: job exists
// with conflicting job modify index: M" (so two callers that read the same
// job cannot both change it); the status's JobModifyIndex being the job's
// ModifyIndex, which moves with every job change, while Scale compares the
// job's JobModifyIndex, which moves only when its spec does (a caller reads
// the job for the index to enforce); a scale while the job's deployment
// runs answered 400 "job scaling blocked due to active deployment" before
// the index is compared. Here a deployment runs from a count change until
// SetHealthy reports the group's allocations, as Nomad's does until they
// are healthy. Jobs come from AddJob; jobs have their own index, apart
// from the service table's.

// job is one job's state.
type job struct {
	ns, id                   string
	groups                   []string // in jobspec order
	count, healthy           map[string]int
	deploying                bool
	stop                     bool
	version                  uint64
	create, modify, jobIndex uint64 // CreateIndex, ModifyIndex, JobModifyIndex
	events                   map[string][]api.ScalingEvent
}

// ScaleHook is told of every scale that changed a group's count, after
// the change; it runs on the request's goroutine, without the stand-in's
// lock, so it may call the Server (register the new allocations' services
// as a Nomad client would).
type ScaleHook func(ns, job, group string, from, to int)

// AddJob registers a service job in namespace ns ("" is "default") with
// groups and their counts, in order; it replaces a job of that id.
func (s *Server) AddJob(ns, id string, groups []string, counts ...int) {
	if ns == "" {
		ns = "default"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobIndex++
	j := &job{ns: ns, id: id, groups: slices.Clone(groups), count: map[string]int{}, healthy: map[string]int{},
		create: s.jobIndex, modify: s.jobIndex, jobIndex: s.jobIndex, events: map[string][]api.ScalingEvent{}}
	for i, g := range groups {
		if i < len(counts) {
			j.count[g] = counts[i]
		}
	}
	if s.jobs == nil {
		s.jobs = map[string]*job{}
	}
	s.jobs[ns+"/"+id] = j
}

// OnScale sets the hook told of count changes (nil: none).
func (s *Server) OnScale(h ScaleHook) {
	s.mu.Lock()
	s.scaleHook = h
	s.mu.Unlock()
}

// Count is a group's count: what the job asks Nomad to run.
func (s *Server) Count(ns, id, group string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[nsOr(ns)+"/"+id]; j != nil {
		return j.count[group]
	}
	return 0
}

// SetHealthy reports n of a group's allocations healthy, as a Nomad client
// does once their checks pass; the job's deployment ends when n reaches
// the count. The job's ModifyIndex moves, its JobModifyIndex does not.
// It reports whether the job has the group.
func (s *Server) SetHealthy(ns, id, group string, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[nsOr(ns)+"/"+id]
	if j == nil || !slices.Contains(j.groups, group) {
		return false
	}
	j.healthy[group] = n
	if n >= j.count[group] {
		j.deploying = false
	}
	s.jobIndex++
	j.modify = s.jobIndex
	return true
}

func nsOr(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// serveJob answers /v1/job/:job_id and /v1/job/:job_id/scale.
func (s *Server) serveJob(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v1/job/")
	raw, sub, _ := strings.Cut(rest, "/")
	id, err := url.PathUnescape(raw)
	if err != nil || id == "" {
		http.Error(w, "missing job ID", http.StatusBadRequest)
		return
	}
	key := namespace(r) + "/" + id
	switch {
	case sub == "" && r.Method == http.MethodGet:
		s.count(func(c *Calls) { c.Job++ })
		s.jobInfo(w, key)
	case sub == "scale" && r.Method == http.MethodGet:
		s.count(func(c *Calls) { c.ScaleStatus++ })
		s.scaleStatus(w, key)
	case sub == "scale" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		s.count(func(c *Calls) { c.Scale++ })
		s.scale(w, r, key, id)
	case sub == "" || sub == "scale":
		http.Error(w, "Invalid method", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

// jobInfo writes the fields of api.Job that llmgw reads.
func (s *Server) jobInfo(w http.ResponseWriter, key string) {
	s.mu.Lock()
	j := s.jobs[key]
	if j == nil {
		s.mu.Unlock()
		http.Error(w, "job not found", http.StatusNotFound)
		return
	}
	groups := make([]map[string]any, 0, len(j.groups))
	for _, g := range j.groups {
		groups = append(groups, map[string]any{"Name": g, "Count": j.count[g]})
	}
	out := map[string]any{"ID": j.id, "Name": j.id, "Namespace": j.ns, "Type": "service", "Status": j.status(),
		"Stop": j.stop, "Version": j.version, "CreateIndex": j.create, "ModifyIndex": j.modify,
		"JobModifyIndex": j.jobIndex, "TaskGroups": groups}
	index := s.jobIndex
	s.mu.Unlock()
	writeJSON(w, index, out)
}

func (j *job) status() string {
	for _, n := range j.count {
		if n > 0 {
			return "running"
		}
	}
	return "dead"
}

func (s *Server) scaleStatus(w http.ResponseWriter, key string) {
	s.mu.Lock()
	j := s.jobs[key]
	if j == nil {
		s.mu.Unlock()
		http.Error(w, "job not found", http.StatusNotFound)
		return
	}
	out := api.JobScaleStatusResponse{JobID: j.id, Namespace: j.ns, JobCreateIndex: j.create,
		JobModifyIndex: j.modify, JobStopped: j.stop, TaskGroups: map[string]api.TaskGroupScaleStatus{}}
	for _, g := range j.groups {
		n := j.count[g]
		out.TaskGroups[g] = api.TaskGroupScaleStatus{Desired: n, Placed: n, Running: n, Healthy: min(j.healthy[g], n),
			Events: slices.Clone(j.events[g])}
	}
	index := s.jobIndex
	s.mu.Unlock()
	writeJSON(w, index, out)
}

// scale is Nomad's Job.Scale: validation in its order, then the count
// change, enforcing JobModifyIndex when set.
func (s *Server) scale(w http.ResponseWriter, r *http.Request, key, id string) {
	var req api.ScalingRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody)).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if t := req.Target["Job"]; t != "" && t != id {
		http.Error(w, "job ID in payload did not match URL", http.StatusBadRequest)
		return
	}
	if ns := req.Target["Namespace"]; ns != "" && ns != namespace(r) {
		http.Error(w, "namespace in payload did not match header", http.StatusBadRequest)
		return
	}
	group := req.Target["Group"]
	if msg := validateScale(group, req); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	resp, from, to, status, msg := s.applyScale(key, id, group, req)
	if status != http.StatusOK {
		http.Error(w, msg, status)
		return
	}
	if hook := s.hook(); hook != nil && from != to {
		hook(namespace(r), id, group, from, to)
	}
	writeJSON(w, resp.Index, resp)
}

// registerResponse is Nomad's scale reply: api.JobRegisterResponse as
// the agent encodes it, with QueryMeta's Index, KnownLeader, LastContact
// and NextToken only.
type registerResponse struct {
	EvalCreateIndex uint64
	EvalID          string
	Index           uint64
	JobModifyIndex  uint64
	KnownLeader     bool
	LastContact     int64
	NextToken       string
	Warnings        string
}

// validateScale is JobScaleRequest.Validate's checks after the target's.
func validateScale(group string, req api.ScalingRequest) string {
	switch {
	case group == "":
		return "missing task group name for scaling action"
	case req.Count != nil && *req.Count < 0:
		return "scaling action count can't be negative"
	case req.Count != nil && req.Error:
		return "scaling action should not contain count if error is true"
	}
	return ""
}

// applyScale changes the count under the lock: it returns the reply, the
// count before and after, and the HTTP status and message of a refusal.
func (s *Server) applyScale(key, id, group string, req api.ScalingRequest) (registerResponse, int, int, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[key]
	if j == nil {
		return registerResponse{}, 0, 0, http.StatusNotFound, fmt.Sprintf("job %q not found", id)
	}
	if !slices.Contains(j.groups, group) {
		return registerResponse{}, 0, 0, http.StatusBadRequest, fmt.Sprintf("task group %q specified for scaling does not exist in job", group)
	}
	from := j.count[group]
	ev := api.ScalingEvent{Count: req.Count, PreviousCount: int64(from), Message: req.Message, Error: req.Error,
		Meta: req.Meta, Time: uint64(time.Now().UnixNano())}
	var resp registerResponse
	to := from
	if req.Count != nil {
		switch {
		case j.deploying:
			return resp, 0, 0, http.StatusBadRequest, "job scaling blocked due to active deployment"
		case req.JobModifyIndex > 0 && req.JobModifyIndex != j.jobIndex:
			return resp, 0, 0, http.StatusInternalServerError, fmt.Sprintf(
				"Enforcing job modify index %d: job exists with conflicting job modify index: %d", req.JobModifyIndex, j.jobIndex)
		}
		to = int(*req.Count)
		j.count[group] = to
		j.version++
		s.jobIndex++
		j.jobIndex, j.modify = s.jobIndex, s.jobIndex
		j.deploying = to > j.healthy[group]
		if to < j.healthy[group] {
			j.healthy[group] = to
		}
		s.jobIndex++ // the evaluation
		resp.EvalID = fmt.Sprintf("eval-%d", s.jobIndex)
		resp.EvalCreateIndex = s.jobIndex
		ev.EvalID = &resp.EvalID
		resp.JobModifyIndex = j.jobIndex
	} else {
		resp.JobModifyIndex = j.modify
	}
	s.jobIndex++ // the scaling event
	ev.CreateIndex = s.jobIndex
	j.events[group] = append([]api.ScalingEvent{ev}, j.events[group]...)
	resp.Index = s.jobIndex
	resp.KnownLeader = true
	resp.NextToken = ""
	return resp, from, to, http.StatusOK, ""
}

func (s *Server) hook() ScaleHook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scaleHook
}

func writeJSON(w http.ResponseWriter, index uint64, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	h.Set("X-Nomad-Knownleader", "true")
	h.Set("X-Nomad-Lastcontact", "0")
	_ = json.NewEncoder(w).Encode(v)
}
