# A task using the vllm driver (inside a job's group, which allocates the
# "http" port and, with the nomad-device-nvidia plugin, the GPUs).
task "qwen" {
  driver = "vllm"

  config {
    model                  = "Qwen/Qwen3-0.6B"
    served_model_name      = "qwen3"
    port                   = "http"
    kv_events              = true
    block_size             = 16
    tensor_parallel_size   = 1
    gpu_memory_utilization = 0.9
    max_model_len          = 8192
    args                   = ["--enable-prefix-caching"]
    env = {
      HF_HOME = "/opt/hf"
    }
  }
}
