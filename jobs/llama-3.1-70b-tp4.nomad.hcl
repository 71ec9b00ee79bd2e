# Llama 3.1 70B Instruct on four GPUs of one node per replica (tensor
# parallel 4), served through the vllm driver. Each replica registers in
# Consul as service "vllm" with the llmgw conventions, so llmgw-router routes
# to it by prefix.
job "llama-3.1-70b-tp4" {
  datacenters = ["*"]
  type        = "service"

  group "engine" {
    count = 1

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
      max     = 4

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_recommended{model=\"llama-3.1-70b\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    network {
      mode = "host"
      port "http" {}
    }

    # Downloading and loading weights takes minutes: a replica counts as
    # healthy only after its /health check has passed for a while, and a
    # deployment waits long enough for a cold start.
    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "30s"
      healthy_deadline  = "50m"
      progress_deadline = "60m"
      auto_revert       = true
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "30s"
      mode     = "fail"
    }

    reschedule {
      delay          = "1m"
      delay_function = "exponential"
      max_delay      = "15m"
      unlimited      = true
    }

    task "vllm" {
      driver = "vllm"

      config {
        model                  = "meta-llama/Llama-3.1-70B-Instruct"
        served_model_name      = "llama-3.1-70b"
        port                   = "http"
        kv_events              = true
        block_size             = 16
        tensor_parallel_size   = 4
        gpu_memory_utilization = 0.92
        max_model_len          = 32768
        args                   = ["--enable-prefix-caching"]
        env = {
          HF_HOME = "/opt/hf"
        }
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "llama-3.1-70b"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
          check_restart {
            limit = 3
            grace = "40m"
          }
        }
      }

      resources {
        cpu    = 16000
        memory = 131072
        device "nvidia/gpu" {
          count = 4
          constraint {
            attribute = "${device.attr.memory}"
            operator  = ">="
            value     = "40 GiB"
          }
        }
      }

      kill_timeout = "30s"

      # Nomad deregisters the replica's service, then waits this long before
      # it signals the engine: routers follow Consul with blocking queries and
      # drop the replica within a fraction of a second, so nothing new is sent
      # to an engine that is shutting down, and requests already running get
      # this long to finish first.
      shutdown_delay = "5s"
    }
  }
}
