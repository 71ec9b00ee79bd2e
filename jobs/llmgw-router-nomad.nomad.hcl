# llmgw-router.nomad.hcl on Nomad's own service discovery, for clusters
# without Consul: the routers read replicas and peers from Nomad's service
# catalogue (discovery = "nomad"), and Nomad registers each instance with
# provider = "nomad" as "llmgw-router", the KV-ingest and admin ports in
# "key=value" tags (Nomad's registrations carry no meta; nomad/doc.go) so
# nomad-driver-vllm (discovery = "nomad" in its plugin config) finds where
# to send block state. Clients reach the routers on their static port.
#
# With ACLs on, the router needs a token that may read services and
# allocations' checks (a policy with read-job in the namespace), stored
# with the other secrets below as nomad_token; without ACLs leave it out.
#
# The admin API (/admin/*, /metrics, explain) has its own port, advertised
# in the service meta llmgw-admin-port for `llmgw status`; it answers only
# with the admin token. Nomad's check stays on the API port's /health.
#
# Before the first run, store the drivers' ingest token, the routers' own
# peer token and an admin token (the allocations wait until this Nomad
# variable exists; a router without the admin token refuses to start, its
# admin port being off loopback). The peer token is the routers' alone and
# must differ from kv_token, so that no GPU node can speak for a router;
# without it the routers share no load, tenants' limits or conversations:
#   nomad var put nomad/jobs/llmgw-router-nomad kv_token=<the plugin's ingest_token> peer_token=<another long random string> admin_token=<a long random string>
# and the client API keys, as a keys file (format in
# cmd/llmgw-router/README.md; a change reaches the routers with SIGHUP,
# without a restart):
#   nomad var put nomad/jobs/llmgw-router-nomad/router keys_json=@keys.json
# Engines started with an API key (api_key_env in the model's jobspec) need
# the same key here, as engine_api_key in the first variable; a job reads
# only its own variables, so the key is stored in both:
#   nomad var put nomad/jobs/llmgw-router-nomad kv_token=... peer_token=... admin_token=... engine_api_key=<the engines' key>
job "llmgw-router-nomad" {
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
    # signals the router: routers and drivers following
    # Nomad's catalogue stop choosing it first, and requests already
    # running (streams included) get this long to finish.
    shutdown_delay = "5s"

    service {
      name     = "llmgw-router"
      provider = "nomad"
      port     = "http"
      tags = [
        "http",
        "llmgw-kv-ingest-port=${NOMAD_PORT_ingest}",
        "llmgw-admin-port=${NOMAD_PORT_admin}",
      ]
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
          admin_listen      = "0.0.0.0:{{ env "NOMAD_PORT_admin" }}"
          advertise_address = "{{ env "NOMAD_IP_http" }}"
          upstream_timeout  = "5m"
          log_level         = "info"

          auth {
            keys_file = "{{ env "NOMAD_SECRETS_DIR" }}/keys.json"
          }

          discovery = "nomad"
          nomad {
            address  = "http://{{ env "attr.unique.network.ip-address" }}:4646"
            services = ["vllm"]
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
          {{ with nomadVar "nomad/jobs/llmgw-router-nomad" }}LLMGW_KV_TOKEN={{ .kv_token }}
          LLMGW_PEER_TOKEN={{ .peer_token }}
          LLMGW_ADMIN_TOKEN={{ .admin_token }}
          LLMGW_ENGINE_API_KEY={{ .engine_api_key }}
          LLMGW_NOMAD_TOKEN={{ .nomad_token }}{{ end }}
        EOT
      }

      template {
        destination   = "secrets/keys.json"
        perms         = "0600"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        data          = <<-EOT
          {{ with nomadVar "nomad/jobs/llmgw-router-nomad/router" }}{{ .keys_json }}{{ end }}
        EOT
      }

      resources {
        cpu    = 1000
        memory = 512
      }
    }
  }
}
