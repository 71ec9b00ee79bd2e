# the task env block sets LD_PRELOAD, and the config env PYTHONPATH
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
        env       = { PYTHONPATH = "/alloc/data" }
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
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
        }
      }

      env {
        LD_PRELOAD = "/alloc/data/hook.so"
      }

      shutdown_delay = "5s"
    }
  }
}
