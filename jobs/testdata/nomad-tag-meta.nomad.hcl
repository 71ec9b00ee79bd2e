# a provider = "nomad" replica keeps its meta in tags; this one says
# llmgw-block-size=32 for an engine with 16, and has meta Nomad drops
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
        name     = "vllm"
        provider = "nomad"
        port     = "http"
        tags     = ["llmgw", "llmgw-model=m", "llmgw-replica=${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}", "llmgw-block-size=32", "llmgw-kv-events=true"]
        meta {
          llmgw-block-size = "16"
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
