// Package hclspec is the generated code of hclspec.proto, our
// wire-compatible description of Nomad's HCL spec messages
// (hashicorp.nomad.plugins.shared.hclspec), with which a plugin declares
// the shape of its configs. `make proto` regenerates it; plugin/spec
// builds the trees.
package hclspec
