// Package layering holds no code: its test enforces the dependency rules of
// DESIGN.md ("a package depends downward only") with go list, so a forbidden
// import fails `make test` instead of surfacing in review.
package layering
