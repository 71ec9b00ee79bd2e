# A GPU-free disaggregated fleet: one prefill and two decode replicas of
# vllm-sim, run by the vllm driver on nodes whose plugin config says
#   plugin "nomad-driver-vllm" { config { engine = "/usr/local/bin/vllm-sim" } }
# The simulator plays vLLM's NixlConnector: the prefill replica holds a
# prompt's blocks, the decode replica pulls the ones it lacks over the side
# channel (the port labelled "nixl") with a modelled transfer time, and
# llmgw-router reads each replica's part from meta llmgw-role (model
# "sim-model"). jobs/llama-3.1-8b-pd.nomad.hcl is the same with GPUs.
job "demo-sim-pd" {
  datacenters = ["*"]
  type        = "service"

  group "prefill" {
    count = 1

    # Autoscaling with the Nomad Autoscaler, off until an operator sets
    # enabled = true (docs/OPERATING.md, "Autoscaling"). The routers export
    # the replicas the model's demand needs (llmgw_model_replicas_needed: the
    # uncached prefill queued after predicted cache hits against the TTFT
    # target, and the requests in flight and waiting against the in-flight
    # target; router/autoscale). pass-through scales to that count; the
    # maximum over 5 minutes, and over routers, scales out at the first sample
    # above the count and in only after 5 minutes of less demand.
    # A prefill replica serves the prefill term alone (by="prefill").
    scaling {
      enabled = false
      min     = 1
      max     = 4

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_needed{model=\"sim-model\", by=\"prefill\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    constraint {
      attribute = "${attr.driver.vllm.engine}"
      operator  = "regexp"
      value     = "vllm-sim$"
    }

    network {
      mode = "host"
      port "http" {}
      port "nixl" {}
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
        role              = "prefill"
        side_channel_port = "nixl"
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
          llmgw-role       = "prefill"
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

      shutdown_delay = "5s"
    }
  }

  group "decode" {
    count = 2

    # Autoscaling with the Nomad Autoscaler, off until an operator sets
    # enabled = true (docs/OPERATING.md, "Autoscaling"). The routers export
    # the replicas the model's demand needs (llmgw_model_replicas_needed: the
    # uncached prefill queued after predicted cache hits against the TTFT
    # target, and the requests in flight and waiting against the in-flight
    # target; router/autoscale). pass-through scales to that count; the
    # maximum over 5 minutes, and over routers, scales out at the first sample
    # above the count and in only after 5 minutes of less demand.
    # A decode replica carries the requests (by="in_flight").
    scaling {
      enabled = false
      min     = 1
      max     = 8

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_needed{model=\"sim-model\", by=\"in_flight\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    constraint {
      attribute = "${attr.driver.vllm.engine}"
      operator  = "regexp"
      value     = "vllm-sim$"
    }

    network {
      mode = "host"
      port "http" {}
      port "nixl" {}
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
        role              = "decode"
        side_channel_port = "nixl"
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
          llmgw-role       = "decode"
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

      shutdown_delay = "5s"
    }
  }
}
