# kv_events on a non-leader shard: rank 1 publishes nothing
job "broken" {
  group "worker" {
    task "vllm" {
      driver = "vllm"

      config {
        model     = "m"
        kv_events = true
        shard {
          rank           = 1
          count          = 2
          leader_address = "leader.service.consul:29500"
        }
      }
    }
  }
}
