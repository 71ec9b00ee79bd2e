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

// Control serves Register, Deregister and SetCheck over HTTP:
//
//	PUT    /_standin/registrations        body: api.ServiceRegistration
//	DELETE /_standin/registrations/:id    404 when id is not registered
//	PUT    /_standin/checks/:alloc_id     body: Check
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
