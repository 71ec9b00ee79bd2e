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
