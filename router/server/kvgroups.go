package server

import (
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/replicas"
)

// declaringKV is the ingest Sink as the replica set's KVState, declaring
// each joining replica's KV-cache group layout from its Consul meta
// (llmgw-kv-cache-groups) before its first KV event names it, and
// forgetting the declaration when the replica leaves.
type declaringKV struct {
	*ingest.Sink
	layouts *kvgroups.Registry
	replica func(id string) (replicas.Replica, bool)
	log     hclog.Logger
}

func (d declaringKV) Joined(id string) []string {
	var l *kvgroups.Layout
	if r, ok := d.replica(id); ok && r.KVCacheGroups != "" {
		bs := r.BlockSize
		if bs <= 0 {
			bs = consul.DefaultBlockSize
		}
		var err error
		if l, err = kvgroups.ParseLayout(r.KVCacheGroups, bs); err != nil {
			d.log.Warn("ignoring the replica's declared kv cache groups; its events will say", "replica", id, "meta", consul.MetaKVCacheGroups, "error", err)
		}
	}
	d.layouts.Declare(id, l)
	return d.Sink.Joined(id)
}

func (d declaringKV) Drop(id string) {
	d.layouts.Declare(id, nil)
	d.Sink.Drop(id)
}
