package index

import (
	"testing"
	"unsafe"
)

// TestShardIsSmall: every probe reads its shard's counter and array
// pointer, so the 256 shards must stay a few cache lines each at most
// (an arena's free lists inside the shard once made them 1.6 KB apart).
func TestShardIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(shard{}); n > 128 {
		t.Errorf("shard is %d bytes; want at most 128", n)
	}
}
