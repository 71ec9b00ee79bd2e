# The figures the docs quote from the build.
#
#   make docs-figures   rewrites CONTRIBUTING.md's region between its
#                       "contributing figures" markers from go.mod and the
#                       Makefile (scripts/contributing-figures.sh);
#                       internal/tests/docs fails when the committed region
#                       differs

.PHONY: docs-figures

docs-figures: ## rewrite CONTRIBUTING.md's figures from go.mod and the Makefile
	scripts/contributing-figures.sh
