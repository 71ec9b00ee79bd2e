// Package nomadtest is a stand-in for the part of Nomad's HTTP API that
// llmgw's Nomad discovery reads, for tests and the demo where no Nomad
// agent runs. It is a real HTTP server that follows Nomad's documented
// API: paths, methods, the X-Nomad-Index blocking semantics and the JSON
// shapes.
//
//	GET    /v1/services                          []ServiceRegistrationListStub
//	GET    /v1/service/:name                     []ServiceRegistration, sorted by ID
//	DELETE /v1/service/:name/:id                 deregisters one registration
//	GET    /v1/client/allocation/:alloc_id/checks  map of check id to status
//	GET    /v1/job/:job_id, GET|PUT|POST /v1/job/:job_id/scale (scale.go)
//
// Reads take ?namespace= ("default" when absent, "*" for all), ?index= and
// ?wait=. As in Nomad, the index is the service table's (one counter for
// every registration, moved by deletes too): a read whose index is below
// the table's answers at once; one at or above it waits until a
// registration it lists changes (of the service read, or for /v1/services
// any of the namespace read), or until wait (default 5 min, at most 10
// min, plus up to wait/16 of jitter) passes, and then answers the current
// list with the table's index in X-Nomad-Index. This is Nomad's
// blockingRPC (nomad/rpc.go) over the memdb watch sets of its List and
// GetService endpoints (nomad/service_registration_endpoint.go). Check
// results have no index, as in Nomad. Calls counts the requests per
// endpoint, for measuring what discovery costs the Nomad servers. With a token set, every request
// must carry it in X-Nomad-Token, else 403 "Permission denied".
//
// Nomad registers services only from jobs (there is no HTTP endpoint for
// it); tests call Register, Deregister and SetCheck instead, and another
// process the same over the control endpoints (Control, control.go).
//
// Verified against a Nomad 2.0.6 dev agent running a raw_exec job with a
// provider = "nomad" service, an http healthiness check and a tcp
// readiness check (on_update = "ignore"): curl of each endpoint above gave
// the same field names and value types (ServiceRegistration's Address,
// AllocID, CreateIndex, Datacenter, ID, JobID, ModifyIndex, Namespace,
// NodeID, Port, ServiceName, Tags; the stub's Namespace, Services with
// ServiceName and Tags; a check's Check, Group "<job>.<group>[<n>]", ID,
// Mode, Output, Service, Status, StatusCode (left out when 0), Task,
// Timestamp in seconds), the headers X-Nomad-Index, X-Nomad-Knownleader
// and X-Nomad-Lastcontact on service reads and none on checks, an
// unknown service read as 200 [], an unknown allocation's checks as 404
// `Unknown allocation "<id>"`, an unknown deregistration as 500 "service
// registration not found", ?wait=bad as 400 "Invalid wait time", and a
// read at the current index returning after wait plus jitter. Blocking
// on that agent (2026-12-05, raw_exec jobs each with one service): a
// /v1/services read at the current index returned as soon as another
// job's service registered, and a /v1/service/svc-a read stayed blocked
// while another service registered, as here.
package nomadtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Nomad's limits on a blocking query's wait.
const (
	defaultWait = 5 * time.Minute
	maxWait     = 10 * time.Minute
)

// Check is one check result as Nomad reports it per allocation; unlike
// api.AllocCheckStatus it leaves out StatusCode and Task when empty, as
// Nomad does.
type Check struct {
	Check      string
	Group      string
	ID         string
	Mode       string
	Output     string
	Service    string
	Status     string
	StatusCode int    `json:",omitempty"`
	Task       string `json:",omitempty"`
	Timestamp  int64
}

// Server is the stand-in. The zero value is not usable; call New.
type Server struct {
	token string

	mu     sync.Mutex
	index  uint64
	regs   map[string]api.ServiceRegistration // by ID
	checks map[string]map[string]Check        // by alloc ID, check ID
	allocs map[string]bool                    // known allocations
	// changed is closed and replaced when a registration of the service
	// named by its key changes.
	changed map[string]chan struct{}
	waiting int // blocked reads
	calls   Calls

	jobs      map[string]*job // by namespace "/" id (scale.go)
	jobIndex  uint64
	scaleHook ScaleHook

	ln  net.Listener
	srv *http.Server
}

// New makes a stand-in; token, when not empty, is the ACL token every
// request must carry.
func New(token string) *Server {
	return &Server{
		token: token, index: 1,
		regs: map[string]api.ServiceRegistration{}, checks: map[string]map[string]Check{},
		allocs: map[string]bool{}, changed: map[string]chan struct{}{},
	}
}

// Listen serves the API on addr ("127.0.0.1:0" picks a port) until Close.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("nomad stand-in: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

// Addr is the API's base URL, as api.Config.Address takes it.
func (s *Server) Addr() string { return "http://" + s.ln.Addr().String() }

// Close stops serving; waiting reads end.
func (s *Server) Close() {
	if s.srv != nil {
		_ = s.srv.Close()
	}
}

// Register adds or replaces a registration (by ID), as a Nomad client
// does when an allocation's task starts. Namespace defaults to
// "default"; the indexes are set. The allocation becomes known, with no
// checks until SetCheck.
func (s *Server) Register(r api.ServiceRegistration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	s.index++
	r.ModifyIndex = s.index
	if old, ok := s.regs[r.ID]; ok {
		r.CreateIndex = old.CreateIndex
	} else {
		r.CreateIndex = s.index
	}
	r.Tags = slices.Clone(r.Tags)
	s.regs[r.ID] = r
	s.allocs[r.AllocID] = true
	s.notify(r)
}

// Deregister removes the registration id, as Nomad does when its
// allocation stops; it reports whether there was one.
func (s *Server) Deregister(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deregister(id)
}

func (s *Server) deregister(id string) bool {
	r, ok := s.regs[id]
	if !ok {
		return false
	}
	delete(s.regs, id)
	s.index++
	s.notify(r)
	return true
}

// SetCheck records the latest result of a check of alloc's service, as
// the Nomad client does after each run. The ID defaults to the
// service and check names; the timestamp to now.
func (s *Server) SetCheck(alloc string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ID == "" {
		c.ID = c.Service + "/" + c.Check
	}
	if c.Mode == "" {
		c.Mode = "healthiness"
	}
	if c.Timestamp == 0 {
		c.Timestamp = time.Now().Unix()
	}
	if s.checks[alloc] == nil {
		s.checks[alloc] = map[string]Check{}
	}
	s.checks[alloc][c.ID] = c
	s.allocs[alloc] = true
}

// Waiting reports how many reads are blocked now, so that a test can
// wait for a watcher to be parked on its query.
func (s *Server) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// Calls counts the API requests the stand-in answered, per endpoint.
type Calls struct {
	Services int // GET /v1/services
	Service  int // GET /v1/service/:name
	Checks   int // GET /v1/client/allocation/:alloc_id/checks

	Job         int // GET /v1/job/:job_id
	ScaleStatus int // GET /v1/job/:job_id/scale
	Scale       int // PUT or POST /v1/job/:job_id/scale
}

// Total is every counted request.
func (c Calls) Total() int {
	return c.Services + c.Service + c.Checks + c.Job + c.ScaleStatus + c.Scale
}

// Calls returns the requests answered so far.
func (s *Server) Calls() Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *Server) count(f func(*Calls)) {
	s.mu.Lock()
	f(&s.calls)
	s.mu.Unlock()
}

// listKey is the changed key of /v1/services reads of namespace ns.
func listKey(ns string) string { return "\x00" + ns }

// notify wakes the reads that list r: of its service, and of the
// service lists of its namespace and of every namespace.
func (s *Server) notify(r api.ServiceRegistration) {
	for _, key := range []string{r.ServiceName, listKey(r.Namespace), listKey("*")} {
		if ch, ok := s.changed[key]; ok {
			close(ch)
			delete(s.changed, key)
		}
	}
}

// ServeHTTP answers the endpoints listed in the package comment.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" && r.Header.Get("X-Nomad-Token") != s.token {
		http.Error(w, "Permission denied", http.StatusForbidden)
		return
	}
	path := r.URL.Path
	switch {
	case path == "/v1/services":
		if r.Method != http.MethodGet {
			http.Error(w, "Invalid method", http.StatusMethodNotAllowed)
			return
		}
		s.count(func(c *Calls) { c.Services++ })
		s.read(w, r, listKey(namespace(r)), s.list)
	case strings.HasPrefix(path, "/v1/service/"):
		parts := strings.Split(strings.TrimPrefix(path, "/v1/service/"), "/")
		switch {
		case len(parts) == 1 && r.Method != http.MethodGet, len(parts) == 2 && r.Method != http.MethodDelete:
			http.Error(w, "Invalid method", http.StatusMethodNotAllowed)
		case len(parts) == 1 && parts[0] == "":
			http.Error(w, "missing service name", http.StatusBadRequest)
		case len(parts) == 1:
			name, _ := url.PathUnescape(parts[0])
			s.count(func(c *Calls) { c.Service++ })
			s.read(w, r, name, func(ns string) any { return s.get(ns, name) })
		case len(parts) == 2 && parts[1] == "":
			http.Error(w, "missing service id", http.StatusBadRequest)
		case len(parts) == 2:
			id, _ := url.PathUnescape(parts[1])
			s.mu.Lock()
			ok := s.deregister(id)
			index := s.index
			s.mu.Unlock()
			if !ok {
				http.Error(w, "service registration not found", http.StatusInternalServerError)
				return
			}
			w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
		default:
			http.Error(w, "invalid URI", http.StatusBadRequest)
		}
	case strings.HasPrefix(path, "/v1/job/"):
		s.serveJob(w, r)
	case strings.HasPrefix(path, "/v1/client/allocation/") && strings.HasSuffix(path, "/checks"):
		s.count(func(c *Calls) { c.Checks++ })
		s.allocChecks(w, strings.TrimSuffix(strings.TrimPrefix(path, "/v1/client/allocation/"), "/checks"))
	default:
		http.NotFound(w, r)
	}
}

// namespace is a read's ?namespace=, "default" when absent.
func namespace(r *http.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return "default"
}

// read answers a blocking read that changes of key wake (a service name,
// or listKey for the service list), rendered by body under the lock.
func (s *Server) read(w http.ResponseWriter, r *http.Request, key string, body func(ns string) any) {
	q := r.URL.Query()
	ns := namespace(r)
	var after uint64
	if v := q.Get("index"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			http.Error(w, "Invalid index", http.StatusBadRequest)
			return
		}
		after = n
	}
	wait := defaultWait
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			http.Error(w, "Invalid wait time", http.StatusBadRequest)
			return
		}
		wait = min(d, maxWait)
	}
	if after > 0 {
		wait += time.Duration(rand.Int64N(int64(wait/16) + 1))
		deadline := time.NewTimer(wait)
		defer deadline.Stop()
		for {
			s.mu.Lock()
			if s.index > after {
				break // answered below, still locked
			}
			ch := s.changed[key]
			if ch == nil {
				ch = make(chan struct{})
				s.changed[key] = ch
			}
			s.waiting++
			s.mu.Unlock()
			var woken, gone bool
			select {
			case <-ch:
				woken = true
			case <-deadline.C:
			case <-r.Context().Done():
				gone = true
			}
			s.mu.Lock()
			s.waiting--
			if gone {
				s.mu.Unlock()
				return
			}
			if woken {
				s.mu.Unlock()
				continue
			}
			break
		}
	} else {
		s.mu.Lock()
	}
	out, index := body(ns), s.index
	s.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	h.Set("X-Nomad-Knownleader", "true")
	h.Set("X-Nomad-Lastcontact", "0")
	_ = json.NewEncoder(w).Encode(out)
}

func inNamespace(ns, of string) bool { return ns == "*" || ns == of }

// get lists name's registrations in ns, sorted by ID. Called locked.
func (s *Server) get(ns, name string) any {
	out := []api.ServiceRegistration{}
	for _, r := range s.regs {
		if r.ServiceName == name && inNamespace(ns, r.Namespace) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// list stubs every service of ns, with the union of its tags. Called
// locked.
func (s *Server) list(ns string) any {
	byNS := map[string]map[string][]string{}
	for _, r := range s.regs {
		if !inNamespace(ns, r.Namespace) {
			continue
		}
		if byNS[r.Namespace] == nil {
			byNS[r.Namespace] = map[string][]string{}
		}
		tags := byNS[r.Namespace][r.ServiceName]
		for _, t := range r.Tags {
			if !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		byNS[r.Namespace][r.ServiceName] = tags
	}
	out := []api.ServiceRegistrationListStub{}
	for _, n := range slices.Sorted(maps.Keys(byNS)) {
		stub := api.ServiceRegistrationListStub{Namespace: n}
		for _, name := range slices.Sorted(maps.Keys(byNS[n])) {
			stub.Services = append(stub.Services, &api.ServiceRegistrationStub{ServiceName: name, Tags: byNS[n][name]})
		}
		out = append(out, stub)
	}
	return out
}

func (s *Server) allocChecks(w http.ResponseWriter, alloc string) {
	s.mu.Lock()
	known := s.allocs[alloc]
	out := map[string]Check{}
	for id, c := range s.checks[alloc] {
		out[id] = c
	}
	s.mu.Unlock()
	if !known {
		http.Error(w, fmt.Sprintf("Unknown allocation %q", alloc), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
