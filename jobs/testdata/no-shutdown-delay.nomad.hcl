# services without shutdown_delay: Nomad would signal the processes while
# routers still send them requests
job "broken" {
  group "engine" {
    network {
      port "http" {}
    }

    task "vllm" {
      driver = "vllm"

      config {
        model = "m"
        port  = "http"
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
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "5s"
          timeout  = "2s"
        }
      }
    }
  }

  group "router" {
    shutdown_delay = "0s"

    network {
      port "http" {}
    }

    service {
      name = "llmgw-router"
      port = "http"
    }

    task "router" {
      driver = "exec"
    }
  }
}
