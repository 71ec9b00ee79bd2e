// Package drivers is the generated code of driver.proto, our
// wire-compatible description of Nomad's task driver service
// (hashicorp.nomad.plugins.drivers.proto.Driver). `make proto` regenerates
// it; docs/PROTOCOLS.md describes the protocol.
package drivers
