# The Nomad ACL policy for the operator who follows docs/OPERATING.md on a
# cluster with ACLs enabled:
#
#   nomad acl policy apply -description "llmgw operator" llmgw-operator docs/operating/llmgw-operator.policy.hcl
#   nomad acl token create -name llmgw-operator -policy llmgw-operator
#
# The jobs themselves need no policy: each task reads only the variables
# its workload identity may read (nomad/jobs/<job>[/<group>[/<task>]]).
namespace "default" {
  # submit, plan, scale and stop jobs; read allocations and their logs;
  # signal a router to reload its keys.
  policy = "write"

  # Store and check the jobs' secrets (section 3).
  variables {
    path "nomad/jobs/*" {
      capabilities = ["write", "read", "list"]
    }
  }
}

# Drain and re-enable a node (section 11); "read" is enough for the rest
# (nomad node status).
node {
  policy = "write"
}

# nomad node status -self asks the local agent which node it is.
agent {
  policy = "read"
}
