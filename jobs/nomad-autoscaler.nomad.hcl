# The Nomad Autoscaler beside the routers: it reads the scaling blocks of
# the model jobs from Nomad, asks Prometheus for llmgw's autoscaling signal
# (llmgw_model_replicas_recommended, router/autoscale) and sets each
# group's count. docs/OPERATING.md, "Autoscaling", runs it.
#
# Prometheus must scrape the routers' admin listeners (deploy/README.md,
# "Scraping"). On a cluster with ACLs the autoscaler needs the "scale"
# disposition on the models' namespace, given to this job's workload
# identity, whose token the task gets as NOMAD_TOKEN:
#   nomad acl policy apply -namespace default -job nomad-autoscaler nomad-autoscaler docs/operating/nomad-autoscaler.policy.hcl
variable "prometheus_address" {
  description = "where the autoscaler queries Prometheus"
  type        = string
  default     = "http://prometheus.service.consul:9090"
}

variable "image" {
  description = "the Nomad Autoscaler's container image"
  type        = string
  default     = "hashicorp/nomad-autoscaler:0.4.5"
}

job "nomad-autoscaler" {
  datacenters = ["*"]
  type        = "service"

  group "autoscaler" {
    # One autoscaler: two would each scale the same groups.
    count = 1

    network {
      port "http" {}
    }

    task "autoscaler" {
      driver = "docker"

      config {
        image   = var.image
        command = "nomad-autoscaler"
        args = [
          "agent",
          "-config", "${NOMAD_TASK_DIR}/config.hcl",
          "-http-bind-address", "0.0.0.0",
          "-http-bind-port", "${NOMAD_PORT_http}",
        ]
        ports = ["http"]
      }

      identity {
        env = true
      }

      # The agent's config: Nomad through the local client, the Prometheus
      # APM, and the pass-through strategy the model jobs' policies name.
      template {
        destination = "${NOMAD_TASK_DIR}/config.hcl"
        data        = <<-EOT
          nomad {
            address = "http://{{ env "attr.unique.network.ip-address" }}:4646"
          }
          apm "prometheus" {
            driver = "prometheus"
            config = {
              address = "${var.prometheus_address}"
            }
          }
          strategy "pass-through" {
            driver = "pass-through"
          }
        EOT
      }

      service {
        name = "nomad-autoscaler"
        port = "http"
        check {
          type     = "http"
          path     = "/v1/health"
          interval = "10s"
          timeout  = "2s"
        }
      }

      resources {
        cpu    = 200
        memory = 256
      }

      shutdown_delay = "5s"
    }
  }
}
