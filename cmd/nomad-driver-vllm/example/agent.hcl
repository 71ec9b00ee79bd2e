# Nomad client agent config that loads the vllm task driver.
# The plugin block's label must equal the binary's file name in plugin_dir.

plugin_dir = "/opt/nomad/plugins"

plugin "nomad-driver-vllm" {
  config {
    engine            = "vllm"
    consul_address    = "127.0.0.1:8500"
    router_service    = "llmgw-router"
    kv_flush_interval = "250ms"
    ingest_token      = "change-me"

    # Who engines run as, and what jobs may load (the defaults, spelt out).
    default_user      = "nobody"
    denied_users      = ["root"]
    allowed_code_env  = []
    allowed_code_args = []
  }
}

client {
  enabled = true
}
