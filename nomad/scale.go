package nomad

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Group names the task group of a job whose count scaling from zero moves.
type Group struct {
	Job, Group string
}

func (g Group) String() string { return g.Job + "/" + g.Group }

// ErrStopped is Scaler's answer for a job an operator stopped: scaling
// it would not start it, and starting it is the operator's call.
var ErrStopped = errors.New("the job is stopped")

// Scaler moves task groups to and from zero through Nomad's scaling API
// (Jobs().Scale, the scale-job capability; reads need read-job), so that of several routers
// that decide at once to start or stop a group exactly one changes its
// count. Each scale names the JobModifyIndex it read with the count
// (Jobs().Info, read-job), and Nomad refuses it (500 "Enforcing job modify
// index") when another change came first: a compare-and-swap in Nomad's
// Raft log, correct across routers and agents, with no lock of our own.
// The index is the job's JobModifyIndex, not the JobModifyIndex of
// Jobs().ScaleStatus, which is the job's ModifyIndex: that moves with
// every status change, so a scale that enforced it would fail whenever the
// job's allocations had changed since its spec did.
type Scaler struct {
	jobs *api.Jobs
}

// NewScaler scales through c (its namespace and region; its token needs
// read-job and scale-job there).
func NewScaler(c *api.Client) *Scaler { return &Scaler{jobs: c.Jobs()} }

// Count reads g's count: how many allocations its job asks for.
func (s *Scaler) Count(ctx context.Context, g Group) (int, error) {
	n, _, err := s.read(ctx, g)
	return n, err
}

// Start scales g from zero to count, with message in Nomad's scaling
// event. It reports whether this call changed the count: false, and no
// error, when the count is already above zero, or another caller moved it
// first.
func (s *Scaler) Start(ctx context.Context, g Group, count int, message string) (bool, error) {
	return s.swap(ctx, g, func(n int) bool { return n == 0 }, count, message)
}

// Stop scales g to zero from any other count, as Start does the other
// way, unless a scale raised the count within recent: another router
// may have started the group for requests that wait for it, which this
// router cannot see. Nomad's scaling events are the one record of starts
// every router reads.
func (s *Scaler) Stop(ctx context.Context, g Group, message string, recent time.Duration) (bool, error) {
	if recent > 0 {
		raised, err := s.raisedSince(ctx, g, time.Now().Add(-recent))
		if err != nil || raised {
			return false, err
		}
	}
	return s.swap(ctx, g, func(n int) bool { return n > 0 }, 0, message)
}

// raisedSince reports whether one of g's scaling events since since
// raised its count.
func (s *Scaler) raisedSince(ctx context.Context, g Group, since time.Time) (bool, error) {
	st, _, err := s.jobs.ScaleStatus(g.Job, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("read scaling events of %s: %w", g, err)
	}
	for _, e := range st.TaskGroups[g.Group].Events {
		if e.Count != nil && *e.Count > e.PreviousCount && !e.Error && int64(e.Time) >= since.UnixNano() {
			return true, nil
		}
	}
	return false, nil
}

// swap sets g's count to to when from accepts the count read, enforcing
// the job modify index read with it.
func (s *Scaler) swap(ctx context.Context, g Group, from func(int) bool, to int, message string) (bool, error) {
	n, index, err := s.read(ctx, g)
	if err != nil || !from(n) {
		return false, err
	}
	count := int64(to)
	req := &api.ScalingRequest{
		Count:          &count,
		Target:         map[string]string{"Job": g.Job, "Group": g.Group},
		Message:        message,
		Meta:           map[string]any{"llmgw": "scale-from-zero"},
		JobModifyIndex: index,
	}
	_, _, err = s.jobs.ScaleWithRequest(g.Job, req, (&api.WriteOptions{}).WithContext(ctx))
	if err == nil {
		return true, nil
	}
	if !lostRace(err) {
		return false, fmt.Errorf("scale %s to %d: %w", g, to, err)
	}
	// Another change came first: moved as wanted, or still to be done.
	if n, _, rerr := s.read(ctx, g); rerr != nil || from(n) {
		return false, fmt.Errorf("scale %s to %d: %w", g, to, err)
	}
	return false, nil
}

// lostRace reports whether err is Nomad's refusal of a scale that
// another change overtook: a conflicting job modify index, or the
// deployment another caller's scale started.
func lostRace(err error) bool {
	var ue api.UnexpectedResponseError
	if !errors.As(err, &ue) {
		return false
	}
	body := ue.Body()
	return ue.StatusCode() == http.StatusInternalServerError && strings.Contains(body, "Enforcing job modify index") ||
		ue.StatusCode() == http.StatusBadRequest && strings.Contains(body, "active deployment")
}

// read returns g's count and its job's JobModifyIndex.
func (s *Scaler) read(ctx context.Context, g Group) (int, uint64, error) {
	job, _, err := s.jobs.Info(g.Job, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("read job %s: %w", g.Job, err)
	}
	if job.Stop != nil && *job.Stop {
		return 0, 0, fmt.Errorf("job %s: %w", g.Job, ErrStopped)
	}
	for _, tg := range job.TaskGroups {
		if tg.Name != nil && *tg.Name == g.Group {
			n := 0
			if tg.Count != nil {
				n = *tg.Count
			}
			var index uint64
			if job.JobModifyIndex != nil {
				index = *job.JobModifyIndex
			}
			return n, index, nil
		}
	}
	return 0, 0, fmt.Errorf("job %s has no group %q", g.Job, g.Group)
}
