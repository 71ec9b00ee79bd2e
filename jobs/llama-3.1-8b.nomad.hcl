# Llama 3.1 8B Instruct on one GPU per replica, served through the vllm
# driver. Each replica registers in Consul as service "vllm" with the llmgw
# conventions, so llmgw-router routes to it by prefix.
job "llama-3.1-8b" {
  datacenters = ["*"]
  type        = "service"

  group "engine" {
    count = 2

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
          query  = "max(max_over_time(llmgw_model_replicas_recommended{model=\"llama-3.1-8b\"}[5m]))"

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
      healthy_deadline  = "30m"
      progress_deadline = "40m"
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
        model                  = "meta-llama/Llama-3.1-8B-Instruct"
        served_model_name      = "llama-3.1-8b"
        port                   = "http"
        kv_events              = true
        block_size             = 16
        gpu_memory_utilization = 0.9
        max_model_len          = 32768
        args                   = ["--enable-prefix-caching"]
        env = {
          HF_HOME = "/opt/hf"
        }
        # The engine's API key (vLLM's --api-key) comes from the template
        # below; the driver hands it to vLLM as VLLM_API_KEY, so it is in
        # neither this job nor the engine's command line.
        api_key_env = "VLLM_API_KEY"
      }

      # The key lives in the Nomad Variable nomad/jobs/llama-3.1-8b:
      #   nomad var put nomad/jobs/llama-3.1-8b engine_api_key=$(openssl rand -hex 32)
      # Routers need the same key as engine_api_key (LLMGW_ENGINE_API_KEY).
      # Without the variable the task does not start; remove this block and
      # api_key_env to serve without a key.
      #
      # A gated model (Llama is one) needs a Hugging Face token to download
      # its weights. Store it in the same variable, optional:
      #   nomad var put nomad/jobs/llama-3.1-8b engine_api_key=... hf_token=hf_...
      # The engine then gets it as HF_TOKEN; without hf_token the line is
      # left out (weights already in HF_HOME need no token).
      template {
        destination = "secrets/engine.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/llama-3.1-8b" }}VLLM_API_KEY={{ .engine_api_key }}
          {{ range $k, $v := . }}{{ if eq $k "hf_token" }}HF_TOKEN={{ $v }}{{ end }}{{ end }}{{ end }}
        EOT
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model         = "llama-3.1-8b"
          llmgw-replica       = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size    = "16"
          llmgw-kv-events     = "true"
          llmgw-root          = "meta-llama/Llama-3.1-8B-Instruct"
          llmgw-max-model-len = "32768"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
          check_restart {
            limit = 3
            grace = "20m"
          }
        }
      }

      resources {
        cpu    = 4000
        memory = 32768
        device "nvidia/gpu" {
          count = 1
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
