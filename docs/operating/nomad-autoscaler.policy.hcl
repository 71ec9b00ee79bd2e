# The Nomad ACL policy of the Nomad Autoscaler (jobs/nomad-autoscaler.nomad.hcl)
# on a cluster with ACLs enabled, given to the job's workload identity:
#
#   nomad acl policy apply -namespace default -job nomad-autoscaler nomad-autoscaler docs/operating/nomad-autoscaler.policy.hcl
#
# "scale" reads the jobs' scaling policies and sets their groups' counts;
# it cannot submit or stop jobs.
namespace "default" {
  policy = "scale"
}
