# llmgw-router: the OpenAI-compatible gateway, two instances on distinct
# hosts. Nomad registers each instance in Consul as "llmgw-router" (the
# router's own registration is off), with the KV-ingest port in service meta
# so nomad-driver-vllm finds where to send block state.
#
# Before the first run, store the drivers' ingest token (the allocations wait
# until this Nomad variable exists):
#   nomad var put nomad/jobs/llmgw-router kv_token=<the plugin's ingest_token>
job "llmgw-router" {
  datacenters = ["*"]
  type        = "service"

  group "router" {
    count = 2

    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    network {
      mode = "host"
      port "http" {
        static = 8080
      }
      port "ingest" {}
    }

    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "10s"
      healthy_deadline  = "2m"
      progress_deadline = "5m"
      auto_revert       = true
    }

    restart {
      attempts = 3
      interval = "5m"
      delay    = "10s"
      mode     = "delay"
    }

    # Nomad deregisters the router's service, then waits this long before it
    # signals the router: clients resolving llmgw-router.service.consul and
    # drivers pushing KV state stop choosing it first, and requests already
    # running (streams included) get this long to finish.
    shutdown_delay = "5s"

    service {
      name = "llmgw-router"
      port = "http"
      tags = ["http"]
      meta {
        llmgw-kv-ingest-port = "${NOMAD_PORT_ingest}"
      }
      check {
        type     = "http"
        path     = "/health"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "router" {
      driver = "exec"

      config {
        command = "/usr/local/bin/llmgw-router"
        args    = ["-config", "${NOMAD_TASK_DIR}/router.hcl"]
      }

      template {
        destination = "local/router.hcl"
        change_mode = "restart"
        data        = <<-EOT
          listen            = "0.0.0.0:{{ env "NOMAD_PORT_http" }}"
          ingest_listen     = "0.0.0.0:{{ env "NOMAD_PORT_ingest" }}"
          advertise_address = "{{ env "NOMAD_IP_http" }}"
          upstream_timeout  = "5m"
          log_level         = "info"

          consul {
            address  = "127.0.0.1:8500"
            services = ["vllm"]
            register = false # Nomad registers this instance
          }

          model "llama-3.1-8b" {}
          model "llama-3.1-70b" {}
          model "sim-model" {
            sim = true
          }
        EOT
      }

      template {
        destination = "secrets/kv.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/llmgw-router" }}LLMGW_KV_TOKEN={{ .kv_token }}{{ end }}
        EOT
      }

      resources {
        cpu    = 1000
        memory = 512
      }
    }
  }
}
