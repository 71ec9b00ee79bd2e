# Llama 3.1 70B Instruct as one replica of two shards on two nodes (pipeline
# parallel across nodes, tensor parallel 4 within each). Rank 0, the leader,
# serves the OpenAI API, registers the replica in Consul and alone publishes
# KV events; rank 1 runs headless and joins the leader.
#
# Both shards meet at leader_address. The leader group registers its
# rendezvous port in Consul as "llama-3-1-70b-leader", so the address is the
# Consul DNS name; clients must resolve *.service.consul (Consul DNS
# forwarding), or replace it with the leader node's address.
job "llama-3.1-70b-two-node" {
  datacenters = ["*"]
  type        = "service"

  # At job level this keeps the leader and the worker on different nodes.
  constraint {
    operator = "distinct_hosts"
    value    = "true"
  }

  # The shards of one replica only work together: deploy and restart them as
  # a unit, and never leave one running without the other.
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "30s"
    healthy_deadline  = "50m"
    progress_deadline = "60m"
    auto_revert       = true
  }

  group "leader" {
    count = 1

    network {
      mode = "host"
      port "http" {}
      port "rendezvous" {
        static = 29500
      }
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "30s"
      mode     = "fail"
    }

    service {
      name = "llama-3-1-70b-leader"
      port = "rendezvous"
    }

    task "vllm" {
      driver = "vllm"

      config {
        model                  = "meta-llama/Llama-3.1-70B-Instruct"
        served_model_name      = "llama-3.1-70b"
        port                   = "http"
        kv_events              = true
        block_size             = 16
        tensor_parallel_size   = 4
        gpu_memory_utilization = 0.92
        args                   = ["--pipeline-parallel-size", "2", "--enable-prefix-caching"]
        env = {
          HF_HOME = "/opt/hf"
        }
        shard {
          rank           = 0
          count          = 2
          leader_address = "llama-3-1-70b-leader.service.consul:29500"
        }
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "llama-3.1-70b"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
          check_restart {
            limit = 3
            grace = "40m"
          }
        }
      }

      resources {
        cpu    = 16000
        memory = 131072
        device "nvidia/gpu" {
          count = 4
        }
      }

      kill_timeout = "30s"

      # Nomad deregisters the replica's service, then waits this long before
      # it signals the engine: routers follow Consul with blocking queries and
      # drop the replica within a fraction of a second, so nothing new is sent
      # to an engine that is shutting down, and requests already running get
      # this long to finish first.
      shutdown_delay = "5s"
    }
  }

  group "worker" {
    count = 1

    restart {
      attempts = 2
      interval = "30m"
      delay    = "30s"
      mode     = "fail"
    }

    # Rank 1 serves no API and publishes no events: no port, no replica
    # service. It joins the leader at the same rendezvous address.
    task "vllm" {
      driver = "vllm"

      config {
        model                = "meta-llama/Llama-3.1-70B-Instruct"
        tensor_parallel_size = 4
        args                 = ["--pipeline-parallel-size", "2"]
        env = {
          HF_HOME = "/opt/hf"
        }
        shard {
          rank           = 1
          count          = 2
          leader_address = "llama-3-1-70b-leader.service.consul:29500"
        }
      }

      resources {
        cpu    = 16000
        memory = 131072
        device "nvidia/gpu" {
          count = 4
        }
      }

      kill_timeout = "30s"
    }
  }
}
