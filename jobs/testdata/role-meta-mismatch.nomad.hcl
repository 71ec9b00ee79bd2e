# the task decodes, its service says prefill
job "broken" {
  group "engine" {
    network {
      port "http" {}
      port "nixl" {}
    }

    task "vllm" {
      driver = "vllm"

      config {
        model = "m"
        role  = "decode"
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "false"
          llmgw-role       = "prefill"
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
