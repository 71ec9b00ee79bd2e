# The Nomad ACL policy for a router that scales models from zero
# (nomad { scale_from_zero "MODEL" { ... } }, cmd/llmgw-router/README.md,
# "Scale from zero"). It is the router's whole Nomad token:
#
#   nomad acl policy apply -description "llmgw router" llmgw-router docs/operating/llmgw-router-scale.policy.hcl
#   nomad acl token create -name llmgw-router -policy llmgw-router
#
# read-job: the job's JobModifyIndex, its groups' counts and scaling
# events (and, with discovery = "nomad", the services and their
# allocations' checks).
# scale-job: change a group's count, and nothing else of the job; Nomad
# refuses the scale of a group whose scaling block's min or max the count
# would leave. Checked against a Nomad 2.0.6 dev agent with ACLs: read-job
# alone reads the job and is refused the scale (403); with scale-job the
# scale goes through.
#
# Name the namespace of the jobs (nomad { namespace }).
namespace "default" {
  capabilities = ["read-job", "scale-job"]
}
