# Real client SDKs against the router (internal/tests/sdk).
#
#   make sdk-node   installs the pinned Node SDKs into a cache outside the
#                   repository; `make test` depends on it
#
# The pins are the releases the SDK tests were written against. They need
# Node 22 (their `engines`), newer than Debian's: the Node runtime comes
# from the same registry as the SDKs (the node-linux-<arch> package, the
# official binary), so the install needs no other source, and the tests
# run the scripts with it. zod is the AI SDK's peer, pinned with it.

SDK_NODE ?= $(CACHE_DIR)/sdk-node
SDK_NODE_RUNTIME := node-linux-$(if $(filter aarch64 arm64,$(shell uname -m)),arm64,x64)@22.23.5
SDK_NODE_PKGS := $(SDK_NODE_RUNTIME) ai@7.0.173 @ai-sdk/openai@4.0.118 @ai-sdk/openai-compatible@3.0.92 \
	openai@7.55.0 @anthropic-ai/sdk@1.10.0 @langchain/openai@1.6.0 @langchain/core@1.4.0 zod@4.6.7
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
		npm install --ignore-scripts --no-audit --no-fund --save-exact --loglevel=error $(SDK_NODE_PKGS) && \
		echo "$(SDK_NODE_PKGS)" > .pins; \
	fi
