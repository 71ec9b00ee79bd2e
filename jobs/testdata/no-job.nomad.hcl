# a jobspec without a job
group "engine" {}
