package intake

import (
	"bytes"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// maxWindow bounds kv_cache_spec_sliding_window, in tokens.
const maxWindow = 1 << 30

// kindOf maps vLLM's kv_cache_spec_kind (KVCacheSpecKind values) to the
// rule routers apply. Full attention in all its forms (MLA, sinks) needs
// every prefix block; kinds not known here are KindUnknown, which routers
// treat as full attention, the strictest rule.
func kindOf(s []byte) kvwire.Kind {
	switch {
	case bytes.HasPrefix(s, []byte("sliding_window")):
		return kvwire.KindSlidingWindow
	case bytes.Equal(s, []byte("mamba")):
		return kvwire.KindMamba
	case bytes.Equal(s, []byte("full_attention")), bytes.Equal(s, []byte("mla_attention")),
		bytes.Equal(s, []byte("sink_full_attention")):
		return kvwire.KindFull
	}
	return kvwire.KindUnknown
}
