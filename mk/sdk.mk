# Real client SDKs against the router (internal/tests/sdk).
#
#   make sdk-node   installs the pinned Node SDKs into a cache outside the
#                   repository; `make test` depends on it
#
# Each pin is the newest release whose `engines` accepts the Node this
# project runs (Debian's, 20): the ai 7, @ai-sdk/openai 4,
# @ai-sdk/openai-compatible 3, openai 7 and @langchain/openai >= 1.5.9
# lines require Node 22. zod is the AI SDK's peer, pinned with it.

SDK_NODE ?= $(CACHE_DIR)/sdk-node
SDK_NODE_PKGS := ai@6.0.333 @ai-sdk/openai@3.0.141 @ai-sdk/openai-compatible@2.0.92 \
	openai@6.49.0 @anthropic-ai/sdk@1.10.0 @langchain/openai@1.5.8 @langchain/core@1.4.0 zod@4.6.7
export LLMGW_SDK_NODE := $(SDK_NODE)
TEST_PREREQS += sdk-node

.PHONY: sdk-node

# The stamp holds the pins it was installed with: a changed pin, or a
# removed node_modules, reinstalls.
sdk-node: ## install the pinned Node client SDKs the SDK tests run (once; cached)
	@command -v npm >/dev/null || { echo "sdk-node needs npm (Debian package npm)"; exit 1; }
	@if [ ! -d "$(SDK_NODE)/node_modules" ] || [ "$$(cat "$(SDK_NODE)/.pins" 2>/dev/null)" != "$(SDK_NODE_PKGS)" ]; then \
		echo "installing the client SDKs into $(SDK_NODE)"; \
		mkdir -p "$(SDK_NODE)" && cd "$(SDK_NODE)" && { [ -f package.json ] || npm init -y >/dev/null; } && \
		npm install --ignore-scripts --no-audit --no-fund --engine-strict --save-exact $(SDK_NODE_PKGS) && \
		echo "$(SDK_NODE_PKGS)" > .pins; \
	fi
