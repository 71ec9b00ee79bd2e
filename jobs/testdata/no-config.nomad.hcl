# a vllm task without a config block
job "broken" {
  group "engine" {
    task "vllm" {
      driver = "vllm"
    }
  }
}
