package nomadtest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func scaleClient(t *testing.T) (*Server, *api.Client, string) {
	t.Helper()
	s, base := controlServer(t, "")
	c, err := api.NewClient(&api.Config{Address: base})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, base
}

// TestScaleEnforcesTheJobModifyIndex: two scales from one read of the job
// change the count once; the second gets Nomad's conflict. The status's
// JobModifyIndex is the job's ModifyIndex, as on a real agent, and the
// hook sees the one change.
func TestScaleEnforcesTheJobModifyIndex(t *testing.T) {
	s, c, _ := scaleClient(t)
	s.AddJob("", "m1", []string{"shard"}, 0)
	var changes [][2]int
	s.OnScale(func(ns, job, group string, from, to int) {
		if ns != "default" || job != "m1" || group != "shard" {
			t.Errorf("hook for %s/%s/%s", ns, job, group)
		}
		changes = append(changes, [2]int{from, to})
	})
	s.SetHealthy("", "m1", "shard", 0) // the job's ModifyIndex moves past its JobModifyIndex
	j, _, err := c.Jobs().Info("m1", nil)
	if err != nil || *j.TaskGroups[0].Count != 0 || *j.Status != "dead" {
		t.Fatalf("info: %v %+v", err, j)
	}
	st, _, err := c.Jobs().ScaleStatus("m1", nil)
	if err != nil || st.JobModifyIndex != *j.ModifyIndex || st.JobModifyIndex == *j.JobModifyIndex {
		t.Fatalf("status %+v (err %v): want the job's ModifyIndex %d, not its JobModifyIndex %d", st, err, *j.ModifyIndex, *j.JobModifyIndex)
	}
	one := int64(1)
	req := &api.ScalingRequest{Count: &one, Target: map[string]string{"Job": "m1", "Group": "shard"}, JobModifyIndex: *j.JobModifyIndex, Message: "first request"}
	resp, _, err := c.Jobs().ScaleWithRequest("m1", req, nil)
	if err != nil || resp.EvalID == "" || resp.JobModifyIndex <= *j.JobModifyIndex {
		t.Fatalf("scale: %v %+v", err, resp)
	}
	s.SetHealthy("", "m1", "shard", 1) // the deployment ends
	_, _, err = c.Jobs().ScaleWithRequest("m1", req, nil)
	var ue api.UnexpectedResponseError
	if !errors.As(err, &ue) || ue.StatusCode() != http.StatusInternalServerError {
		t.Fatalf("second scale from the same read: %v; want a 500 conflict", err)
	}
	st, _, err = c.Jobs().ScaleStatus("m1", nil)
	tg := st.TaskGroups["shard"]
	if err != nil || tg.Desired != 1 || tg.Healthy != 1 || len(tg.Events) != 1 || tg.Events[0].Message != "first request" || tg.Events[0].PreviousCount != 0 {
		t.Fatalf("status after: %v %+v", err, tg)
	}
	if len(changes) != 1 || changes[0] != [2]int{0, 1} || s.Count("", "m1", "shard") != 1 || s.Calls().Scale != 2 {
		t.Fatalf("changes %v, count %d, calls %+v; want one change 0→1 of two scales", changes, s.Count("", "m1", "shard"), s.Calls())
	}
}

// TestScaleRefusals: Nomad's answers to scales it refuses, as a dev agent
// gave them.
func TestScaleRefusals(t *testing.T) {
	s, _, base := scaleClient(t)
	s.AddJob("", "m1", []string{"shard"}, 0)
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"unknown job", "POST", "/v1/job/x/scale", `{"Count":1,"Target":{"Group":"shard"}}`, 404, `job "x" not found` + "\n"},
		{"unknown status", "GET", "/v1/job/x/scale", ``, 404, "job not found\n"},
		{"unknown info", "GET", "/v1/job/x", ``, 404, "job not found\n"},
		{"other job", "POST", "/v1/job/m1/scale", `{"Count":1,"Target":{"Job":"m2","Group":"shard"}}`, 400, "job ID in payload did not match URL\n"},
		{"no group", "POST", "/v1/job/m1/scale", `{"Count":1,"Target":{"Job":"m1"}}`, 400, "missing task group name for scaling action\n"},
		{"unknown group", "PUT", "/v1/job/m1/scale", `{"Count":1,"Target":{"Group":"nope"}}`, 400, `task group "nope" specified for scaling does not exist in job` + "\n"},
		{"negative", "POST", "/v1/job/m1/scale", `{"Count":-1,"Target":{"Group":"shard"}}`, 400, "scaling action count can't be negative\n"},
		{"method", "DELETE", "/v1/job/m1/scale", ``, 405, "Invalid method\n"},
		{"stale index", "POST", "/v1/job/m1/scale", `{"Count":1,"Target":{"Group":"shard"},"JobModifyIndex":99}`, 500,
			"Enforcing job modify index 99: job exists with conflicting job modify index: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := send(t, tc.method, base+tc.path, tc.body); code != tc.code || body != tc.msg {
				t.Fatalf("%d %q; want %d %q", code, body, tc.code, tc.msg)
			}
		})
	}
	if s.Count("", "m1", "shard") != 0 {
		t.Fatal("a refused scale changed the count")
	}
	// A change starts a deployment; a second change waits for it.
	if code, body := send(t, "POST", base+"/v1/job/m1/scale", `{"Count":1,"Target":{"Group":"shard"}}`); code != 200 {
		t.Fatalf("scale: %d %s", code, body)
	}
	if code, body := send(t, "POST", base+"/v1/job/m1/scale", `{"Count":2,"Target":{"Group":"shard"}}`); code != 400 || body != "job scaling blocked due to active deployment\n" {
		t.Fatalf("scale during the deployment: %d %q", code, body)
	}
}
