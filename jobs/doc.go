// Package jobs holds the Nomad jobspecs for the router and for models, and the
// code that validates and submits them through github.com/hashicorp/nomad/api.
package jobs
