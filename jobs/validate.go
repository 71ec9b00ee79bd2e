package jobs

import (
	"fmt"
	"os"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Problem is one thing wrong in a jobspec, at the place it was found.
type Problem struct {
	Pos     hcl.Pos
	File    string
	Message string
	// Warning marks what may be right on some clusters (a variable path
	// an ACL policy can open): printed, but the jobspec still validates.
	Warning bool
}

// String formats the problem as compilers do, "file:line:col: message"
// ("file:line:col: warning: message" for a warning), so editors and CI
// logs link to it.
func (p Problem) String() string {
	if p.Warning {
		return fmt.Sprintf("%s:%d:%d: warning: %s", p.File, p.Pos.Line, p.Pos.Column, p.Message)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Pos.Line, p.Pos.Column, p.Message)
}

// ValidateFile reads and validates one jobspec. The error is for a file that
// cannot be read; problems in its content come back as Problems.
func ValidateFile(path string) ([]Problem, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read jobspec: %w", err)
	}
	return Validate(path, src), nil
}

// Validate checks a jobspec's source, named filename in the problems it
// reports. It returns every problem found, sorted by position; none means
// the vllm tasks in it are ones the driver accepts.
func Validate(filename string, src []byte) []Problem {
	c := &checker{}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	c.diags(diags)
	if diags.HasErrors() {
		return c.sorted()
	}
	body := file.Body.(*hclsyntax.Body)
	jobs := 0
	for _, b := range body.Blocks {
		if b.Type == "job" {
			jobs++
			c.job(b)
		}
	}
	if jobs == 0 {
		c.add(body.SrcRange, `no job block: a jobspec holds one job "name" { ... }`)
	}
	return c.sorted()
}

// checker collects problems while walking one file.
type checker struct {
	problems []Problem
}

func (c *checker) add(r hcl.Range, format string, args ...any) {
	c.problems = append(c.problems, Problem{Pos: r.Start, File: r.Filename, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) warn(r hcl.Range, format string, args ...any) {
	c.problems = append(c.problems, Problem{Pos: r.Start, File: r.Filename, Message: fmt.Sprintf(format, args...), Warning: true})
}

func (c *checker) diags(diags hcl.Diagnostics) {
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		r := hcl.Range{}
		if d.Subject != nil {
			r = *d.Subject
		}
		c.add(r, "%s", msg)
	}
}

func (c *checker) sorted() []Problem {
	sort.SliceStable(c.problems, func(i, j int) bool {
		a, b := c.problems[i].Pos, c.problems[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return c.problems
}

func (c *checker) job(job *hclsyntax.Block) {
	for _, g := range job.Body.Blocks {
		if g.Type == "group" {
			c.group(g)
			c.shutdownDelays(g)
			if len(job.Labels) == 1 && len(g.Labels) == 1 {
				for _, t := range blocks(g.Body, "task") {
					c.templateVariables(job.Labels[0], g.Labels[0], t)
				}
			}
		}
	}
}

// group checks the vllm tasks of one task group and the group-level
// services that front them.
func (c *checker) group(g *hclsyntax.Block) {
	ports := portLabels(g.Body)
	apiPorts := map[string]bool{} // API ports of the group's leader vllm tasks
	model, sharded := "", false   // what the group's scaling policy scales
	for _, t := range g.Body.Blocks {
		if t.Type != "task" || !isVLLM(t.Body) {
			continue
		}
		task, ok := c.taskConfig(t, ports)
		if !ok {
			continue
		}
		if task.leader() {
			apiPorts[task.cfg.Port] = true
			model = task.cfg.ServedModelName
			if model == "" {
				model = task.cfg.Model
			}
		}
		sharded = sharded || task.cfg.Shard != nil
		c.taskServices(t, task)
	}
	c.scaling(g, model, sharded)
	for _, s := range blocks(g.Body, "service") {
		if port, ok := stringAttr(s.Body, "port"); ok && apiPorts[port] {
			c.add(s.DefRange(), "service on vllm port %q is declared at group level, which has no task, so ${NOMAD_TASK_NAME} is not interpolated; declare it inside the vllm task so llmgw-replica is <alloc id>/<task name>", port)
		}
	}
}

// portLabels are the labels of the group's network block ports, the only
// ones Nomad allocates to its tasks.
func portLabels(group *hclsyntax.Body) []string {
	var labels []string
	for _, n := range blocks(group, "network") {
		for _, p := range blocks(n.Body, "port") {
			if len(p.Labels) == 1 {
				labels = append(labels, p.Labels[0])
			}
		}
	}
	return labels
}

func isVLLM(task *hclsyntax.Body) bool {
	d, ok := stringAttr(task, "driver")
	return ok && d == "vllm"
}

func blocks(body *hclsyntax.Body, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// stringAttr is a body attribute's value when it is a constant string.
func stringAttr(body *hclsyntax.Body, name string) (string, bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return "", false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return "", false
	}
	return v.AsString(), true
}
