# A GPU-free demo fleet: four replicas of vllm-sim, the vLLM simulator, run
# by the same vllm driver on nodes whose plugin config says
#   plugin "nomad-driver-vllm" { config { engine = "/usr/local/bin/vllm-sim" } }
# The simulator speaks vLLM's API and KV-event wire format, so llmgw-router
# routes to it exactly as to real engines (model "sim-model").
job "demo-sim" {
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
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "sim-model"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
        }
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
      # it signals the engine: routers follow Consul with blocking queries and
      # drop the replica within a fraction of a second, so nothing new is sent
      # to an engine that is shutting down, and requests already running get
      # this long to finish first.
      shutdown_delay = "5s"
    }
  }
}
