// Package jobs holds the Nomad jobspecs for the router and for models (the
// *.nomad.hcl files in this folder), and the code that validates them before
// they reach Nomad.
//
// Validate parses a jobspec with HCL's native syntax (Nomad's own jobspec
// package is not importable here) and checks every task with
// driver = "vllm": its config block against the driver's own schema and
// validation (driver.ParseTaskConfig, fed the go-cty msgpack Nomad would
// send), the port labels it names against the group's network block, and the
// Consul service conventions routers rely on (tag llmgw and the llmgw-* meta).
// Every problem carries the file:line:col it was found at.
//
// Submit validates, then submits a jobspec through a Nomad agent
// (github.com/hashicorp/nomad/api: the agent's parse endpoint, then register)
// and follows the evaluation and the deployment.
//
// It may import driver/ and plugin/ packages; never router/... or cmd/....
package jobs
