package jobs

import (
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nomadVarCall matches a template function that reads a Nomad variable
// by path: nomadVar, nomadVarExists and nomadVarList(Safe) take the path
// (or prefix) as their first argument, with an optional "@namespace"
// suffix.
var nomadVarCall = regexp.MustCompile(`\bnomadVar(?:Exists|List|ListSafe)?\s+"([^"@]*)`)

// templateVariables checks that every Nomad variable a task's templates
// read is one its workload identity may read on a cluster with ACLs:
// nomad/jobs/<job>, nomad/jobs/<job>/<group> or
// nomad/jobs/<job>/<group>/<task>. Any other path needs an ACL policy
// attached to the job, and without one the allocation waits forever on
// "Template Missing" while the agent logs a 403. It is a warning, since
// an operator may have attached such a policy.
func (c *checker) templateVariables(job, group string, task *hclsyntax.Block) {
	if len(task.Labels) != 1 {
		return
	}
	name := task.Labels[0]
	allowed := []string{"nomad/jobs/" + job, "nomad/jobs/" + job + "/" + group, "nomad/jobs/" + job + "/" + group + "/" + name}
	for _, tpl := range blocks(task.Body, "template") {
		data, ok := tpl.Body.Attributes["data"]
		if !ok {
			continue
		}
		for _, m := range nomadVarCall.FindAllStringSubmatch(literalText(data.Expr), -1) {
			path := strings.TrimSuffix(m[1], "/")
			if !readable(path, allowed) {
				c.warn(data.Expr.Range(), "task %q: template reads Nomad variable %q, which the task's workload identity cannot read under Nomad ACLs (it may read %s); store it at one of those paths, or attach an ACL policy to job %q granting read on it", name, path, strings.Join(allowed, ", "), job)
			}
		}
	}
}

// readable reports whether path is one of allowed.
func readable(path string, allowed []string) bool {
	for _, a := range allowed {
		if path == a {
			return true
		}
	}
	return false
}

// literalText is the literal text of a template expression, with every
// interpolation left out: what nomadVar calls the file holds whatever
// its job variables are.
func literalText(e hclsyntax.Expression) string {
	var sb strings.Builder
	var walk func(hclsyntax.Expression)
	walk = func(e hclsyntax.Expression) {
		switch e := e.(type) {
		case *hclsyntax.TemplateExpr:
			for _, p := range e.Parts {
				walk(p)
			}
		case *hclsyntax.TemplateWrapExpr:
			walk(e.Wrapped)
		case *hclsyntax.LiteralValueExpr:
			if v := e.Val; v.IsKnown() && !v.IsNull() && v.Type().FriendlyName() == "string" {
				sb.WriteString(v.AsString())
			}
		}
	}
	walk(e)
	return sb.String()
}
