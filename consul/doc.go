// Package consul wraps github.com/hashicorp/consul/api for llmgw: service
// registration, health checks and blocking-query watches. The nested module
// consul/agent pins the MPL-2.0 Consul v1.14.11 build that tests and the demo
// run as a real agent (bin/consul).
package consul
