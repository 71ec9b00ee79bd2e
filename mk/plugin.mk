# plugin/: Nomad's driver plugin protocol.
#
#   make proto   regenerates plugin/proto/**/*.pb.go from our .proto files.
#
# protoc comes from Debian's protobuf-compiler (installed by `deps`); the Go
# generators are installed at pinned versions into bin/protoc-tools through the
# module proxy. The generated code is committed, so `make build` and
# `make test` do not need protoc.

PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
PROTO_TOOLS := $(CURDIR)/bin/protoc-tools
PROTO_FILES := $(shell find plugin/proto -name '*.proto' 2>/dev/null | sort)

.PHONY: proto proto-tools

proto-tools:
	@mkdir -p $(PROTO_TOOLS)
	GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(PROTO_TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

proto: deps proto-tools
	PATH=$(PROTO_TOOLS):$$PATH protoc -I plugin/proto \
		--go_out=plugin/proto --go_opt=paths=source_relative \
		--go-grpc_out=plugin/proto --go-grpc_opt=paths=source_relative \
		$(patsubst plugin/proto/%,%,$(PROTO_FILES))
