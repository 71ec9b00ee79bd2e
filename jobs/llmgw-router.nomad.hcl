# llmgw-router: the OpenAI-compatible gateway, two instances on distinct
# hosts. Nomad registers each instance in Consul as "llmgw-router" (the
# router's own registration is off), with the KV-ingest port in service meta
# so nomad-driver-vllm finds where to send block state.
#
# The admin API (/admin/*, /metrics, explain) has its own port, advertised
# in the service meta llmgw-admin-port for `llmgw status`; it answers only
# with the admin token. Consul's check stays on the API port's /health.
#
# Before the first run, store the drivers' ingest token, the routers' own
# peer token and an admin token (the allocations wait until this Nomad
# variable exists; a router without the admin token refuses to start, its
# admin port being off loopback). The peer token is the routers' alone and
# must differ from kv_token, so that no GPU node can speak for a router;
# without it the routers share no load, tenants' limits or conversations:
#   nomad var put nomad/jobs/llmgw-router kv_token=<the plugin's ingest_token> peer_token=<another long random string> admin_token=<a long random string>
# and the client API keys, as a keys file (format in
# cmd/llmgw-router/README.md; a change reaches the routers with SIGHUP,
# without a restart):
#   nomad var put nomad/jobs/llmgw-router/router keys_json=@keys.json
# Engines started with an API key (api_key_env in the model's jobspec) need
# the same key here, as engine_api_key in the first variable; a job reads
# only its own variables, so the key is stored in both:
#   nomad var put nomad/jobs/llmgw-router kv_token=... peer_token=... admin_token=... engine_api_key=<the engines' key>
# The variables below keep their defaults on a standard cluster; change them
# with -var (nomad job run, nomad job plan, llmgw jobs run), e.g. on a
# cluster of one node: -var routers=1.
variable "routers" {
  description = "router instances, each on its own host"
  type        = number
  default     = 2
}

variable "http_port" {
  description = "the static port clients reach the routers on"
  type        = number
  default     = 8080
}

variable "router_command" {
  description = "the llmgw-router binary on the clients (inside the exec driver's chroot)"
  type        = string
  default     = "/usr/local/bin/llmgw-router"
}

variable "consul_address" {
  description = "the Consul agent the routers watch for replicas and peers"
  type        = string
  default     = "127.0.0.1:8500"
}

variable "expose_route_headers" {
  description = "send clients the X-Llmgw-* route headers (replica, mode, prefill replica); only where every client is trusted"
  type        = bool
  default     = false
}

variable "tracing_endpoint" {
  description = "OTLP/HTTP traces URL the routers send spans to (http://collector:4318/v1/traces); empty: no tracing"
  type        = string
  default     = ""
}

variable "tracing_sample_ratio" {
  description = "share of new traces recorded, 0..1; a client's traceparent decides for its own request"
  type        = number
  default     = 1
}

job "llmgw-router" {
  datacenters = ["*"]
  type        = "service"

  group "router" {
    count = var.routers

    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    network {
      mode = "host"
      port "http" {
        static = var.http_port
      }
      port "ingest" {}
      port "admin" {}
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
        llmgw-admin-port     = "${NOMAD_PORT_admin}"
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
        command = var.router_command
        args    = ["-config", "${NOMAD_TASK_DIR}/router.hcl"]
      }

      # The environment wins over the config file: the Consul address, the
      # route headers and tracing are job variables.
      env {
        LLMGW_CONSUL_ADDRESS       = var.consul_address
        LLMGW_EXPOSE_ROUTE_HEADERS = var.expose_route_headers
        LLMGW_TRACING_ENDPOINT     = var.tracing_endpoint
        LLMGW_TRACING_SAMPLE_RATIO = var.tracing_sample_ratio
      }

      template {
        destination = "local/router.hcl"
        change_mode = "restart"
        data        = <<-EOT
          listen            = "0.0.0.0:{{ env "NOMAD_PORT_http" }}"
          ingest_listen     = "0.0.0.0:{{ env "NOMAD_PORT_ingest" }}"
          admin_listen      = "0.0.0.0:{{ env "NOMAD_PORT_admin" }}"
          advertise_address = "{{ env "NOMAD_IP_http" }}"
          upstream_timeout  = "5m"
          log_level         = "info"

          auth {
            keys_file = "{{ env "NOMAD_SECRETS_DIR" }}/keys.json"
          }

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
          {{ with nomadVar "nomad/jobs/llmgw-router" }}LLMGW_KV_TOKEN={{ .kv_token }}
          LLMGW_PEER_TOKEN={{ .peer_token }}
          LLMGW_ADMIN_TOKEN={{ .admin_token }}
          LLMGW_ENGINE_API_KEY={{ .engine_api_key }}{{ end }}
        EOT
      }

      template {
        destination   = "secrets/keys.json"
        perms         = "0600"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = <<-EOT
          {{ with nomadVar "nomad/jobs/llmgw-router/router" }}{{ .keys_json }}{{ end }}
        EOT
      }

      resources {
        cpu    = 1000
        memory = 512
      }
    }
  }
}
