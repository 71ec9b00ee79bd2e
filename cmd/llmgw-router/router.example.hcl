# llmgw-router example configuration. Every setting here can also come from
# an LLMGW_* environment variable or a flag (flags win); see README.md.

listen        = "0.0.0.0:8080" # OpenAI API
ingest_listen = "0.0.0.0:8081" # KV updates from nomad-driver-vllm
# kv_token is better given as LLMGW_KV_TOKEN (e.g. from a Nomad template),
# and so is peer_token (LLMGW_PEER_TOKEN), which routers present to one
# another and drivers never hold; without it routers share no load. So is
# engine_api_key (LLMGW_ENGINE_API_KEY), the key engines started with
# vLLM's --api-key want; a model block's engine_api_key overrides it.

# The admin API (/admin/*, /metrics, explain) answers only here; off
# loopback it needs admin_token (better given as LLMGW_ADMIN_TOKEN).
admin_listen = "127.0.0.1:8082"
# X-Llmgw-* route headers (replica, mode, predicted cached tokens) let any
# client probe the prefix cache: only for trusted clients.
expose_route_headers = false

# Bounds every connection is held to (see README.md).
read_header_timeout = "10s"
body_timeout        = "30s" # a trickled body is cut off with 408
write_timeout       = "30s" # per write, so streams may last longer
idle_timeout        = "90s"
max_header_bytes    = 65536
max_headers         = 100
max_connections     = 4096 # per listener

# TLS, per listener; the files are read again when they change.
# tls_cert_file        = "/secrets/api.pem"
# tls_key_file         = "/secrets/api-key.pem"
# admin_tls_cert_file  = "/secrets/admin.pem"
# admin_tls_key_file   = "/secrets/admin-key.pem"
# ingest_tls_cert_file = "/secrets/ingest.pem"
# ingest_tls_key_file  = "/secrets/ingest-key.pem"
# peer_ca_file         = "/secrets/ca.pem" # verifies peers' ingest certificates

max_body_bytes   = 8388608
attempts         = 3 # replicas tried before the first byte reaches the client
upstream_timeout = "5m"
driver_expiry    = "30s"
scrape_interval  = "1s"
log_level        = "info"

# Pin requests to the data-parallel rank predicted to cache their prefix.
pin_data_parallel_rank = true

# OpenTelemetry spans of each request, over OTLP/HTTP (off while empty);
# a client's traceparent decides sampling for its own request.
# tracing_endpoint     = "http://127.0.0.1:4318/v1/traces"
tracing_sample_ratio = 1

# Responses API conversations this router keeps for previous_response_id.
responses_store_bytes = 268435456
responses_ttl         = "1h"

# Requests that find every replica of their model over its busy threshold
# wait in their tenant's queue up to queue_timeout, then get 429; at most
# max_queue wait in all, max_queue_per_tenant per tenant (0: max_queue).
queue_timeout        = "2s"
max_queue            = 1024
max_queue_per_tenant = 256

# How soon a change in this router's own load reaches the other routers
# registered in Consul, and when a silent one stops counting (0 turns the
# sharing off).
peer_load_interval = "50ms"
peer_load_expiry   = "3s"

# Client API keys. A plain list (each key its own tenant) is better given as
# LLMGW_API_KEYS; tenants with models, limits and cache isolation come from
# the keys file (see README.md). Neither: every client is anonymous.
# api_keys = ["llmgw-..."]
auth {
  keys_file       = "/secrets/llmgw-keys.json"
  reload_interval = "2s" # SIGHUP reloads at once
}

consul {
  address        = "127.0.0.1:8500"
  services       = ["vllm"] # services whose instances tagged "llmgw" are replicas
  register       = true     # register as llmgw-router with an HTTP check on /health
  check_interval = "10s"
}

model "Qwen/Qwen3-8B" {
  tokenizer_dir = "/models/Qwen3-8B" # tokenizer.json and the chat template
}

model "sim-model" {
  sim = true # vllm-sim without a tokenizer directory: tokenized on its /tokenize
}

# A model whose tokenizer files the router does not have: one /tokenize
# round trip per request instead of approx routing.
model "org/remote-model" {
  engine_tokenize = true
}

# A replica outside Consul (local runs).
replica "local-1/main" {
  model      = "sim-model"
  address    = "127.0.0.1:8000"
  block_size = 16
}

scheduler {
  filter "model" {}
  filter "healthy" {}
  filter "busy" {
    params = { max_in_flight = 64, max_kv_usage = 0.97 }
  }
  scorer "prefix" {
    weight = 1
    params = { cpu_weight = 0.75, speculative_ttl = "2s" }
  }
  scorer "approx-prefix" {
    weight = 1
  }
  # After the prefix scorers: it reads what they predict cached.
  scorer "ttft" {
    weight = 4
    params = { base_tokens = 256, waiting_tokens = 512, running_tokens = 128 }
  }
  scorer "load" {
    weight = 1
  }
  scorer "session" {
    weight = 3
    params = { header = "X-Session-Id", idle_ttl = "10m" }
  }
  picker "max-score" {}
}
