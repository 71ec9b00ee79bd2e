// Package simtokenizer is the deterministic tokenizer vllm-sim uses when it
// is given no Hugging Face tokenizer.json, and its chat template.
//
// It exists so that a simulated fleet and a router agree on token ids without
// any model files: both sides import this package, so a prompt routed by the
// router hashes to the same blocks the simulator caches. It needs no
// vocabulary: text is split into word-like pieces (a letter or digit run with
// its leading space, a punctuation run, a whitespace run), each piece is cut
// into chunks of at most three bytes, and a chunk's id is its bytes packed into
// an integer. That gives about one token per three to four bytes of English,
// the same order as real BPE vocabularies, and ids that decode exactly.
//
// It is a leaf package: it imports only the standard library.
package simtokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Special token ids. Ids below FirstTextID are reserved for special tokens.
const (
	PadID uint32 = 0
	BOSID uint32 = 1
	EOSID uint32 = 2
	// FirstTextID is the smallest id a text chunk can have.
	FirstTextID uint32 = 256
)

const maxChunk = 3

// Specials maps the special tokens' text forms to their ids. The chat
// template emits the ChatML markers; they encode as single tokens.
var Specials = map[string]uint32{
	"<pad>":        PadID,
	"<s>":          BOSID,
	"</s>":         EOSID,
	"<|im_start|>": 3,
	"<|im_end|>":   4,
}

var specialText = func() map[uint32]string {
	m := make(map[uint32]string, len(Specials))
	for s, id := range Specials {
		m[id] = s
	}
	return m
}()

// Tokenizer is stateless; the zero value is ready to use.
type Tokenizer struct{}

// Encode returns the token ids of text. With addSpecialTokens the BOS id is
// prepended, as Llama-style tokenizers do for completion prompts. Special
// token markers in text encode as their single ids.
func (Tokenizer) Encode(text string, addSpecialTokens bool) []uint32 {
	ids := make([]uint32, 0, len(text)/3+2)
	if addSpecialTokens {
		ids = append(ids, BOSID)
	}
	for len(text) > 0 {
		i, id, n := nextSpecial(text)
		ids = appendPieces(ids, text[:i])
		if n == 0 {
			break
		}
		ids = append(ids, id)
		text = text[i+n:]
	}
	return ids
}

// nextSpecial finds the first special marker in s, returning its index, id
// and length; n is 0 when there is none (and i is len(s)).
func nextSpecial(s string) (i int, id uint32, n int) {
	for {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return len(s), 0, 0
		}
		i += j
		for text, sid := range Specials {
			if strings.HasPrefix(s[i:], text) {
				return i, sid, len(text)
			}
		}
		i++
	}
}

func appendPieces(ids []uint32, s string) []uint32 {
	for len(s) > 0 {
		n := pieceLen(s)
		piece := s[:n]
		for len(piece) > 0 {
			c := min(maxChunk, len(piece))
			ids = append(ids, chunkID(piece[:c]))
			piece = piece[c:]
		}
		s = s[n:]
	}
	return ids
}

// pieceLen returns the length of the word-like piece at the start of s.
func pieceLen(s string) int {
	i := 0
	r, w := utf8.DecodeRuneInString(s)
	if r == ' ' && len(s) > 1 {
		// A single leading space joins the word after it.
		if r2, _ := utf8.DecodeRuneInString(s[1:]); isWord(r2) {
			i, r, w = 1, r2, 0
			_, w = utf8.DecodeRuneInString(s[1:])
		}
	}
	class := classOf(r)
	i += w
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if classOf(r) != class {
			// A space run gives its last space to the word after it.
			if class == classSpace && isWord(r) && s[i-1] == ' ' && i > 1 {
				i--
			}
			break
		}
		i += w
	}
	return i
}

const (
	classWord = iota
	classSpace
	classOther
)

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func classOf(r rune) int {
	switch {
	case isWord(r):
		return classWord
	case unicode.IsSpace(r):
		return classSpace
	default:
		return classOther
	}
}

// chunkID packs 1-3 bytes into an id: FirstTextID + length offset + bytes.
func chunkID(b string) uint32 {
	v := uint32(0)
	for i := 0; i < len(b); i++ {
		v = v<<8 | uint32(b[i])
	}
	return FirstTextID + lenBase(len(b)) + v
}

// lenBase is the id offset of chunks of length n, so lengths never collide.
func lenBase(n int) uint32 {
	switch n {
	case 1:
		return 0
	case 2:
		return 1 << 8
	default:
		return 1<<8 + 1<<16
	}
}

// Decode returns the text of ids. With skipSpecial, special tokens are left
// out. It fails on an id that no chunk or special token has.
func (Tokenizer) Decode(ids []uint32, skipSpecial bool) (string, error) {
	var sb strings.Builder
	for _, id := range ids {
		if id < FirstTextID {
			s, ok := specialText[id]
			if !ok {
				return "", fmt.Errorf("token id %d is not in the vocabulary", id)
			}
			if !skipSpecial {
				sb.WriteString(s)
			}
			continue
		}
		v := id - FirstTextID
		var n int
		switch {
		case v < lenBase(2):
			n = 1
		case v < lenBase(3):
			n, v = 2, v-lenBase(2)
		case v-lenBase(3) < 1<<24:
			n, v = 3, v-lenBase(3)
		default:
			return "", fmt.Errorf("token id %d is not in the vocabulary", id)
		}
		for i := n - 1; i >= 0; i-- {
			sb.WriteByte(byte(v >> (8 * i)))
		}
	}
	return sb.String(), nil
}

// VocabSize is one past the largest id Encode can return.
const VocabSize = FirstTextID + 1<<8 + 1<<16 + 1<<24
