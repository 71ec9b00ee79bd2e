package scheduler

import "hash/maphash"

// TextChunkBytes is the default chunk size for TextBlockKeys (production-
// stack and AIBrix use 128-character chunks).
const TextChunkBytes = 128

// textSeed is fixed per process: text keys only meet the routing history of
// the same router process, never the KV-event index or another router.
var textSeed = maphash.MakeSeed()

// TextBlockKeys appends to dst one chained key per full chunk of text:
// the key of chunk i covers chunks 0..i, so equal keys mean equal prefixes,
// as with token block keys. A trailing partial chunk gets no key (an engine
// caches only full blocks). The router uses these as Request.ApproxKeys
// while a model's tokenizer is unavailable.
func TextBlockKeys(dst []uint64, text string, chunk int) []uint64 {
	if chunk <= 0 {
		chunk = TextChunkBytes
	}
	var h maphash.Hash
	h.SetSeed(textSeed)
	var prev [8]byte
	for off := 0; off+chunk <= len(text); off += chunk {
		h.Reset()
		h.Write(prev[:])
		h.WriteString(text[off : off+chunk])
		k := h.Sum64()
		dst = append(dst, k)
		for i := range prev {
			prev[i] = byte(k >> (8 * i))
		}
	}
	return dst
}
