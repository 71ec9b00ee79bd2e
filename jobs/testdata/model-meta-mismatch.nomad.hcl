# the service names another root, max_model_len and data-parallel size
# than the task loads
job "broken" {
  group "engine" {
    network {
      port "http" {}
    }

    task "vllm" {
      driver = "vllm"

      config {
        model              = "org/m-7b"
        served_model_name  = "m"
        max_model_len      = 4096
        data_parallel_size = 2
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model              = "m"
          llmgw-replica            = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size         = "16"
          llmgw-kv-events          = "false"
          llmgw-root               = "org/m-8b"
          llmgw-max-model-len      = "8192"
          llmgw-data-parallel-size = "4"
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
