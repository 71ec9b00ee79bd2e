package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"maps"
	"slices"

	"github.com/hashicorp/nomad/api"
)

// Submit validates a jobspec, then has the Nomad agent parse it (the agent's
// parser is the authority on everything but our vllm checks), registers the
// job, and follows what the scheduler does with it: the evaluation (placement
// failures, such as no node with free GPUs, are reported) and, for a service
// job, its deployment until it succeeds or fails. progress gets one line per
// change. The error says why the job is not running as asked.
func Submit(ctx context.Context, client *api.Client, path string, progress io.Writer) error {
	return SubmitVars(ctx, client, path, "", progress)
}

// SubmitVars is Submit with values for the jobspec's input variables, as an
// HCL variable file (VarFile makes one from name=value pairs).
func SubmitVars(ctx context.Context, client *api.Client, path, vars string, progress io.Writer) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read jobspec: %w", err)
	}
	if problems := Validate(path, src); len(problems) > 0 {
		lines := make([]string, len(problems))
		for i, p := range problems {
			lines[i] = p.String()
		}
		return fmt.Errorf("%s is invalid:\n%s", path, strings.Join(lines, "\n"))
	}
	job, err := client.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: string(src), Variables: vars, Canonicalize: true})
	if err != nil {
		return fmt.Errorf("nomad parse %s: %w", path, err)
	}
	resp, _, err := client.Jobs().Register(job, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("nomad register %s: %w", deref(job.ID), err)
	}
	if resp.Warnings != "" {
		fmt.Fprintf(progress, "job %s: warnings: %s\n", deref(job.ID), resp.Warnings)
	}
	fmt.Fprintf(progress, "job %s registered, evaluation %s\n", deref(job.ID), resp.EvalID)
	if resp.EvalID == "" {
		return nil // periodic and parameterized jobs are evaluated later
	}
	eval, err := followEval(ctx, client, resp.EvalID, progress)
	if err != nil {
		return err
	}
	if eval.DeploymentID == "" {
		return nil // batch and system jobs, or nothing changed
	}
	return followDeployment(ctx, client, eval.DeploymentID, progress)
}

// followEval waits until the scheduler has processed the evaluation.
func followEval(ctx context.Context, client *api.Client, id string, progress io.Writer) (*api.Evaluation, error) {
	var index uint64
	for {
		eval, meta, err := client.Evaluations().Info(id, (&api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second}).WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("follow evaluation %s: %w", id, err)
		}
		index = meta.LastIndex
		switch eval.Status {
		case "pending":
			continue
		case "complete":
			groups := slices.Sorted(maps.Keys(eval.FailedTGAllocs))
			for _, g := range groups {
				fmt.Fprintf(progress, "group %s: placement failed: %s\n", g, placementReason(eval.FailedTGAllocs[g]))
			}
			return eval, nil
		default:
			return nil, fmt.Errorf("evaluation %s %s: %s", id, eval.Status, eval.StatusDescription)
		}
	}
}

// placementReason summarises why no node fitted (e.g. "nvidia/gpu
// exhausted on 3 nodes").
func placementReason(m *api.AllocationMetric) string {
	if m == nil {
		return "no details"
	}
	var parts []string
	for _, src := range []map[string]int{m.DimensionExhausted, m.ConstraintFiltered, m.ClassExhausted} {
		keys := slices.Sorted(maps.Keys(src))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s (%d nodes)", k, src[k]))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d nodes evaluated, none fit", m.NodesEvaluated)
	}
	return strings.Join(parts, ", ")
}

// followDeployment prints each change of the deployment until it ends.
func followDeployment(ctx context.Context, client *api.Client, id string, progress io.Writer) error {
	var index uint64
	last := ""
	for {
		d, meta, err := client.Deployments().Info(id, (&api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second}).WithContext(ctx))
		if err != nil {
			return fmt.Errorf("follow deployment %s: %w", id, err)
		}
		index = meta.LastIndex
		if line := deploymentLine(d); line != last {
			fmt.Fprintln(progress, line)
			last = line
		}
		switch d.Status {
		case api.DeploymentStatusSuccessful:
			return nil
		case api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
			return fmt.Errorf("deployment %s %s: %s", id, d.Status, d.StatusDescription)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("follow deployment %s: %w", id, errors.Join(err, errors.New("the deployment goes on in Nomad")))
		}
	}
}

func deploymentLine(d *api.Deployment) string {
	groups := slices.Sorted(maps.Keys(d.TaskGroups))
	var b strings.Builder
	fmt.Fprintf(&b, "deployment %s: %s", shortID(d.ID), d.Status)
	for _, g := range groups {
		s := d.TaskGroups[g]
		fmt.Fprintf(&b, "; %s %d/%d healthy", g, s.HealthyAllocs, s.DesiredTotal)
		if s.UnhealthyAllocs > 0 {
			fmt.Fprintf(&b, ", %d unhealthy", s.UnhealthyAllocs)
		}
	}
	return b.String()
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
