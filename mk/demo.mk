# `make demo` (the top-level target runs ./bin/llmgw demo after `build`)
# also needs the Consul agent: the demo starts a real one (cmd/llmgw/internal/fleet),
# with nomad-driver-vllm, vllm-sim and llmgw-router from bin/. bin/consul is
# built once and cached outside the repository, so a fresh clone on a
# machine that built it before only copies it.

demo: bin/consul
