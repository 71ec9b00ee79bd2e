# the replica service at group level, where NOMAD_TASK_NAME is empty
job "broken" {
  group "engine" {
    network {
      port "http" {}
    }

    service {
      name = "vllm"
      port = "http"
      tags = ["llmgw"]
    }

    task "vllm" {
      driver = "vllm"

      config {
        model = "m"
      }

      shutdown_delay = "5s"
    }
  }
}
