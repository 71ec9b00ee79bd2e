// Package layering holds no code: its tests enforce the dependency rules
// of docs/ARCHITECTURE.md ("a package depends downward only") with go
// list, so a forbidden import fails `make test` instead of surfacing in
// review, and that the repository stands on its own (no tracked file
// points outside it).
package layering
