# the service says embed, the engine args make a generate engine
job "broken" {
  group "engine" {
    network {
      port "http" {}
    }

    task "vllm" {
      driver = "vllm"

      config {
        model = "m"
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
          llmgw-task       = "embed"
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
