# Llama 3.1 8B Instruct served disaggregated: a prefill group computes
# prompts' KV and a decode group pulls it over NIXL and generates. Both
# register as Consul service "vllm" with the llmgw conventions plus meta
# llmgw-role, which tells llmgw-router to run each request in two steps:
# the prompt on a prefill replica (kv_transfer_params with
# do_remote_decode), then the generation on a decode replica, which reads
# the prompt's blocks from the prefill replica's GPU memory.
#
# Not runnable without GPUs. What a real NIXL deployment needs:
#   - One GPU per replica (device "nvidia/gpu"), and the same model, block
#     size and dtype on both sides: the decode engine reads raw KV blocks.
#   - The NIXL side channel: each engine listens on
#     VLLM_NIXL_SIDE_CHANNEL_PORT at VLLM_NIXL_SIDE_CHANNEL_HOST for the
#     handshake. The driver sets both from the port labelled "nixl" (the
#     node's address), so decode replicas on other nodes can reach it: let
#     it through the firewall between the groups' nodes.
#   - The data path: NIXL moves blocks with UCX, over RDMA (InfiniBand or
#     RoCE) when the node has it, else TCP. The driver runs the engine in
#     the host's namespaces (network mode "host"), so it sees the host's
#     /dev/infiniband devices and NICs directly; no device passthrough is
#     needed. Pin the NIC with UCX_NET_DEVICES (e.g. "mlx5_0:1") and the
#     transports with UCX_TLS in the task's env if UCX picks wrongly. The
#     constraints below keep both groups on nodes an operator marked as on
#     an RDMA fabric (client meta llmgw_rdma_fabric set). is_set does not
#     compare the fabrics of the two groups' nodes: on a cluster with more
#     than one fabric, give both constraints operator "=" and the one
#     fabric's name as value.
#   - Memory: RDMA registers the whole KV cache; raise the memlock limit
#     of the Nomad client (LimitMEMLOCK=infinity in its systemd unit).
job "llama-3.1-8b-pd" {
  datacenters = ["*"]
  type        = "service"

  group "prefill" {
    count = 1

    # Autoscaling with the Nomad Autoscaler, off until an operator sets
    # enabled = true (docs/OPERATING.md, "Autoscaling"). The routers export
    # the replicas the model's demand needs (llmgw_model_replicas_needed: the
    # uncached prefill queued after predicted cache hits against the TTFT
    # target, and the requests in flight and waiting against the in-flight
    # target; router/autoscale). pass-through scales to that count; the
    # maximum over 5 minutes, and over routers, scales out at the first sample
    # above the count and in only after 5 minutes of less demand.
    # A prefill replica serves the prefill term alone (by="prefill").
    scaling {
      enabled = false
      min     = 1
      max     = 4

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_needed{model=\"llama-3.1-8b\", by=\"prefill\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    constraint {
      attribute = "${meta.llmgw_rdma_fabric}"
      operator  = "is_set"
    }

    network {
      mode = "host"
      port "http" {}
      # The NIXL side channel (handshake); decode replicas connect to it.
      port "nixl" {}
    }

    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "30s"
      healthy_deadline  = "30m"
      progress_deadline = "40m"
      auto_revert       = true
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "30s"
      mode     = "fail"
    }

    task "vllm" {
      driver = "vllm"

      config {
        model                  = "meta-llama/Llama-3.1-8B-Instruct"
        served_model_name      = "llama-3.1-8b"
        port                   = "http"
        kv_events              = true
        block_size             = 16
        gpu_memory_utilization = 0.9
        max_model_len          = 32768
        # vLLM's --kv-transfer-config with the NixlConnector (kv_both) and
        # the side channel on the port labelled side_channel_port.
        role              = "prefill"
        side_channel_port = "nixl"
        args              = ["--enable-prefix-caching"]
        env = {
          HF_HOME = "/opt/hf"
        }
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "llama-3.1-8b"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
          llmgw-role       = "prefill"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
          check_restart {
            limit = 3
            grace = "20m"
          }
        }
      }

      resources {
        cpu    = 4000
        memory = 32768
        device "nvidia/gpu" {
          count = 1
        }
      }

      kill_timeout   = "30s"
      shutdown_delay = "5s"
    }
  }

  group "decode" {
    count = 2

    # Autoscaling with the Nomad Autoscaler, off until an operator sets
    # enabled = true (docs/OPERATING.md, "Autoscaling"). The routers export
    # the replicas the model's demand needs (llmgw_model_replicas_needed: the
    # uncached prefill queued after predicted cache hits against the TTFT
    # target, and the requests in flight and waiting against the in-flight
    # target; router/autoscale). pass-through scales to that count; the
    # maximum over 5 minutes, and over routers, scales out at the first sample
    # above the count and in only after 5 minutes of less demand.
    # A decode replica carries the requests (by="in_flight").
    scaling {
      enabled = false
      min     = 1
      max     = 8

      policy {
        cooldown            = "5m"
        evaluation_interval = "30s"

        check "llmgw-recommended" {
          source = "prometheus"
          query  = "max(max_over_time(llmgw_model_replicas_needed{model=\"llama-3.1-8b\", by=\"in_flight\"}[5m]))"

          strategy "pass-through" {}
        }
      }
    }

    constraint {
      attribute = "${meta.llmgw_rdma_fabric}"
      operator  = "is_set"
    }

    network {
      mode = "host"
      port "http" {}
      port "nixl" {}
    }

    update {
      max_parallel      = 1
      health_check      = "checks"
      min_healthy_time  = "30s"
      healthy_deadline  = "30m"
      progress_deadline = "40m"
      auto_revert       = true
    }

    restart {
      attempts = 2
      interval = "30m"
      delay    = "30s"
      mode     = "fail"
    }

    task "vllm" {
      driver = "vllm"

      config {
        model                  = "meta-llama/Llama-3.1-8B-Instruct"
        served_model_name      = "llama-3.1-8b"
        port                   = "http"
        kv_events              = true
        block_size             = 16
        gpu_memory_utilization = 0.9
        max_model_len          = 32768
        role                   = "decode"
        side_channel_port      = "nixl"
        args                   = ["--enable-prefix-caching"]
        env = {
          HF_HOME = "/opt/hf"
        }
      }

      service {
        name = "vllm"
        port = "http"
        tags = ["llmgw"]
        meta {
          llmgw-model      = "llama-3.1-8b"
          llmgw-replica    = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"
          llmgw-block-size = "16"
          llmgw-kv-events  = "true"
          llmgw-role       = "decode"
        }
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "5s"
          check_restart {
            limit = 3
            grace = "20m"
          }
        }
      }

      resources {
        cpu    = 4000
        memory = 32768
        device "nvidia/gpu" {
          count = 1
        }
      }

      kill_timeout   = "30s"
      shutdown_delay = "5s"
    }
  }
}
