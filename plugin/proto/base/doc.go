// Package base is the generated code of base.proto, our wire-compatible
// description of Nomad's base plugin service
// (hashicorp.nomad.plugins.base.proto.BasePlugin: identity, agent-config
// schema, agent config). `make proto` regenerates it; docs/PROTOCOLS.md
// describes the protocol.
package base
