# demo-sim.nomad.hcl on Nomad's own service discovery: the replicas
# register with provider = "nomad", for clusters without Consul. Nomad's
# service registrations carry no meta, so the llmgw meta travel as
# "key=value" tags (nomad/doc.go); Nomad runs the check itself. Routers
# read them with discovery = "nomad" (llmgw-router-nomad.nomad.hcl), and
# the plugin config says discovery = "nomad" so drivers find the routers:
#   plugin "nomad-driver-vllm" { config { engine = "/usr/local/bin/vllm-sim" discovery = "nomad" } }
job "demo-sim-nomad" {
  datacenters = ["*"]
  type        = "service"

  group "sim" {
    count = 4

    # Autoscaling with the Nomad Autoscaler, off until an operator sets
    # enabled = true (docs/OPERATING.md, "Autoscaling"). The routers export
    # the replicas the model's demand needs (llmgw_model_replicas_recommended:
    # the uncached prefill queued after predicted cache hits against the TTFT
    # target, and the requests in flight and waiting against the in-flight
    # target; router/autoscale). pass-through scales to that count; the
    # maximum over 5 minutes, and over routers, scales out at the first sample
    # above the count and in only after 5 minutes of less demand.
    scaling {
      enabled = false
      min     = 1
      max     = 8

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_recommended{model=\"sim-model\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    # Only nodes whose driver runs vllm-sim (the fingerprint reports the
    # engine's path).
    constraint {
      attribute = "${attr.driver.vllm.engine}"
      operator  = "regexp"
      value     = "vllm-sim$"
    }

    network {
      mode = "host"
      port "http" {}
    }

    update {
      max_parallel      = 2
      health_check      = "checks"
      min_healthy_time  = "5s"
      healthy_deadline  = "2m"
      progress_deadline = "5m"
      auto_revert       = true
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "5s"
      mode     = "delay"
    }

    task "sim" {
      driver = "vllm"

      config {
        model             = "sim-model"
        served_model_name = "sim-model"
        port              = "http"
        kv_events         = true
        block_size        = 16
        max_model_len     = 8192
      }

      service {
        name     = "vllm"
        provider = "nomad"
        port     = "http"
        tags = [
          "llmgw",
          "llmgw-model=sim-model",
          "llmgw-replica=${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}",
          "llmgw-block-size=16",
          "llmgw-kv-events=true",
        ]
        check {
          type     = "http"
          path     = "/health"
          interval = "5s"
          timeout  = "2s"
          check_restart {
            limit = 3
            grace = "30s"
          }
        }
      }

      resources {
        cpu    = 500
        memory = 256
      }

      # Nomad deregisters the replica's service, then waits this long before
      # it signals the engine: routers follow Nomad's catalogue with blocking
      # queries and drop the replica within a fraction of a second, so nothing new is sent
      # to an engine that is shutting down, and requests already running get
      # this long to finish first.
      shutdown_delay = "5s"
    }
  }
}
