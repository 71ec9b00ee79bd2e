# the driver allows 1..4096
job "broken" {
  group "engine" {
    network {
      port "http" {}
    }

    task "vllm" {
      driver = "vllm"

      config {
        model     = "m"
        kv_events = true
        block_size = 8192
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "8192"
          llmgw-kv-events  = "true"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
        }
      }

      shutdown_delay = "5s"
    }
  }
}
