// Package layering holds no code: its tests enforce the layout of
// docs/ARCHITECTURE.md ("Layout": parts stacked in layers, imports that
// point down only, deployed binaries free of simulator code and test
// support) with go list, so a forbidden import fails `make test` instead
// of surfacing in review, and that the repository stands on its own (no
// tracked file points outside it).
package layering
