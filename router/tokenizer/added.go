package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens.
type addedToken struct {
	id                         uint32
	content                    string
	special                    bool
	singleWord, lstrip, rstrip bool
}

// addedMatcher finds added tokens in text, leftmost-longest, as the Rust
// crate's Aho-Corasick matcher does. It is a byte trie: the root's children
// in a table, the others in short lists (most nodes have one child).
type addedMatcher struct {
	nodes []trieNode
	root  [256]int32 // child of the root per first byte; 0 if none
	only  int        // the one first byte all patterns share, or -1
}

type trieNode struct {
	keys  []byte
	next  []int32
	token int32 // index into tokens, -1 if none ends here
}

func (m *addedMatcher) child(n int32, c byte) int32 {
	if n == 0 {
		return m.root[c]
	}
	nd := &m.nodes[n]
	for k, key := range nd.keys {
		if key == c {
			return nd.next[k]
		}
	}
	return 0
}

func newAddedMatcher(patterns []string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{token: -1}}}
	for i, p := range patterns {
		if p == "" {
			continue
		}
		n := int32(0)
		for j := 0; j < len(p); j++ {
			c := p[j]
			nx := m.child(n, c)
			if nx == 0 {
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{token: -1})
				if n == 0 {
					m.root[c] = nx
				} else {
					m.nodes[n].keys = append(m.nodes[n].keys, c)
					m.nodes[n].next = append(m.nodes[n].next, nx)
				}
			}
			n = nx
		}
		if m.nodes[n].token < 0 {
			m.nodes[n].token = int32(i)
		}
	}
	m.only = -1
	for c, n := range m.root {
		switch {
		case n == 0:
		case m.only == -1:
			m.only = c
		default:
			m.only = -2
		}
	}
	return m
}

// longestAt returns the index and length of the longest pattern starting at
// s[i:], or -1.
func (m *addedMatcher) longestAt(s string, i int) (int, int) {
	best, bestLen := -1, 0
	n := int32(0)
	for j := i; j < len(s); j++ {
		n = m.child(n, s[j])
		if n == 0 {
			break
		}
		if t := m.nodes[n].token; t >= 0 {
			best, bestLen = int(t), j+1-i
		}
	}
	return best, bestLen
}

// segment is a run of text, or an added token when tok >= 0.
type segment struct {
	start, end int
	tok        int
}

// split cuts s into text segments and added-token segments, honouring the
// tokens' single_word, lstrip and rstrip flags like the Rust crate.
func (m *addedMatcher) split(dst []segment, s string, tokens []addedToken, idx []int) []segment {
	if m == nil || len(m.nodes) == 1 {
		return append(dst, segment{0, len(s), -1})
	}
	textStart := 0 // start of the pending text segment
	for i := 0; i < len(s); {
		if m.only >= 0 && s[i] != byte(m.only) {
			// Every token starts with the same byte (e.g. '<'): jump to it.
			k := strings.IndexByte(s[i:], byte(m.only))
			if k < 0 {
				break
			}
			i += k
		}
		if m.root[s[i]] == 0 {
			i++
			continue
		}
		t, n := m.longestAt(s, i)
		if t < 0 {
			i++
			continue
		}
		tok := tokens[idx[t]]
		start, stop := i, i+n
		if tok.singleWord && (endsWithWord(s[:start]) || startsWithWord(s[stop:])) {
			i++
			continue
		}
		if tok.lstrip {
			ns := start
			for ns > textStart {
				r, sz := utf8.DecodeLastRuneInString(s[:ns])
				if !unicode.IsSpace(r) {
					break
				}
				ns -= sz
			}
			start = ns
		}
		if tok.rstrip {
			for stop < len(s) {
				r, sz := utf8.DecodeRuneInString(s[stop:])
				if !unicode.IsSpace(r) {
					break
				}
				stop += sz
			}
		}
		if start > textStart {
			dst = append(dst, segment{textStart, start, -1})
		}
		dst = append(dst, segment{start, stop, idx[t]})
		textStart = stop
		i = stop
	}
	if textStart < len(s) {
		dst = append(dst, segment{textStart, len(s), -1})
	}
	return dst
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWord(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}
