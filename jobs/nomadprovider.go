package jobs

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// nomadProvider reports whether a service registers in Nomad's own
// catalogue (provider = "nomad") rather than Consul.
func nomadProvider(s *hclsyntax.Block) bool {
	p, ok := stringAttr(s.Body, "provider")
	return ok && p == "nomad"
}

// tagMeta collects the llmgw meta of a provider = "nomad" service, which
// travels as "llmgw-key=value" tags (Nomad's registrations have no meta;
// nomad/doc.go). Tags that are not constant count as none.
func (c *checker) tagMeta(s *hclsyntax.Block) (map[string]metaValue, hcl.Range) {
	out := map[string]metaValue{}
	r := s.DefRange()
	if a, ok := s.Body.Attributes["tags"]; ok {
		r = a.SrcRange
	}
	tags, _ := c.tags(s)
	for _, t := range tags {
		if k, v, ok := strings.Cut(t, "="); ok && strings.HasPrefix(k, "llmgw-") {
			if _, dup := out[k]; !dup {
				out[k] = metaValue{value: v, known: true, rng: r}
			}
		}
	}
	return out, r
}
