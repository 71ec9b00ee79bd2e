# no health check: routers would use the replica before the model loads
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
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "m"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
        }
      }

      shutdown_delay = "5s"
    }
  }
}
