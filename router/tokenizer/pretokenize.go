package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// piece is a span of normalized text on its way to the model. first is true
// when the piece starts at offset 0 of the original input (Metaspace's
// prepend_scheme "first" needs it).
type piece struct {
	s     string
	first bool
}

// preTokenizer splits pieces into smaller ones, appending to dst.
type preTokenizer interface {
	split(dst []piece, p piece) []piece
}

// behavior is the Rust crate's SplitDelimiterBehavior.
type behavior int

const (
	removed behavior = iota
	isolated
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return removed, nil
	case "Isolated":
		return isolated, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("split behavior %q not supported", s)
}

// span is a byte range of a piece and whether the pattern matched it.
type span struct {
	start, end int
	match      bool
}

// matcher finds the pattern's matches in s, as spans covering all of s.
type matcher interface {
	spans(dst []span, s string) []span
}

type stringMatcher string

func (m stringMatcher) spans(dst []span, s string) []span {
	if m == "" || s == "" {
		return append(dst, span{0, len(s), false})
	}
	prev := 0
	for {
		i := strings.Index(s[prev:], string(m))
		if i < 0 {
			break
		}
		if i > 0 {
			dst = append(dst, span{prev, prev + i, false})
		}
		dst = append(dst, span{prev + i, prev + i + len(m), true})
		prev += i + len(m)
	}
	if prev != len(s) {
		dst = append(dst, span{prev, len(s), false})
	}
	return dst
}

type regexMatcher struct{ re *regexp2.Regexp }

func (m regexMatcher) spans(dst []span, s string) []span {
	if s == "" {
		return append(dst, span{0, 0, false})
	}
	runes := []rune(s)
	// regexp2 reports rune offsets; walk them forward into byte offsets.
	ri, bi := 0, 0
	toByte := func(r int) int {
		for ri < r {
			_, n := utf8.DecodeRuneInString(s[bi:])
			bi += n
			ri++
		}
		return bi
	}
	prev := 0
	mt, err := m.re.FindRunesMatch(runes)
	for err == nil && mt != nil {
		start := toByte(mt.Index)
		end := toByte(mt.Index + mt.Length)
		if prev != start {
			dst = append(dst, span{prev, start, false})
		}
		dst = append(dst, span{start, end, true})
		prev = end
		mt, err = m.re.FindNextMatch(mt)
	}
	if prev != len(s) {
		dst = append(dst, span{prev, len(s), false})
	}
	return dst
}

// splitter is the Split pre-tokenizer (and the regex half of ByteLevel).
type splitter struct {
	m        matcher
	behavior behavior
	invert   bool
}

var spanPool = sync.Pool{New: func() any { s := make([]span, 0, 64); return &s }}

func (sp splitter) split(dst []piece, p piece) []piece {
	bp := spanPool.Get().(*[]span)
	defer spanPool.Put(bp)
	spans := sp.m.spans((*bp)[:0], p.s)
	*bp = spans[:0]
	if sp.invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	spans = applyBehavior(spans, sp.behavior)
	for i, s := range spans {
		if s.end > s.start {
			dst = append(dst, piece{s: p.s[s.start:s.end], first: p.first && i == 0 && s.start == 0})
		}
	}
	return dst
}

// applyBehavior folds matches into their neighbours the way the Rust crate
// does; the result's spans are all kept (match is false on every one).
func applyBehavior(spans []span, b behavior) []span {
	out := spans[:0]
	prevMatch := false
	switch b {
	case removed:
		for _, s := range spans {
			if !s.match {
				out = append(out, s)
			}
		}
	case isolated:
		out = spans
	case mergedWithPrevious:
		for _, s := range spans {
			if s.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, span{s.start, s.end, false})
			}
			prevMatch = s.match
		}
	case contiguous:
		for i, s := range spans {
			if i > 0 && s.match == prevMatch {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, span{s.start, s.end, false})
			}
			prevMatch = s.match
		}
	case mergedWithNext:
		// Walk backwards, extending the following span to the left.
		rev := make([]span, 0, len(spans))
		for i := len(spans) - 1; i >= 0; i-- {
			s := spans[i]
			if s.match && !prevMatch && len(rev) > 0 {
				rev[len(rev)-1].start = s.start
			} else {
				rev = append(rev, span{s.start, s.end, false})
			}
			prevMatch = s.match
		}
		out = out[:0]
		for i := len(rev) - 1; i >= 0; i-- {
			out = append(out, rev[i])
		}
	}
	return out
}

// prefixSpace is ByteLevel's add_prefix_space.
type prefixSpace struct{}

func (prefixSpace) split(dst []piece, p piece) []piece {
	if !strings.HasPrefix(p.s, " ") {
		p.s = " " + p.s
	}
	return append(dst, p)
}

// metaspace replaces spaces with the replacement character, optionally
// prepends one, and optionally splits before each replacement character.
type metaspace struct {
	repl    string
	prepend string // "always", "first" or "never"
	divide  bool
}

func (m metaspace) split(dst []piece, p piece) []piece {
	s := strings.ReplaceAll(p.s, " ", m.repl)
	if !strings.HasPrefix(s, m.repl) && (m.prepend == "always" || (m.prepend == "first" && p.first)) {
		s = m.repl + s
	}
	p.s = s
	if !m.divide {
		return append(dst, p)
	}
	return splitter{m: stringMatcher(m.repl), behavior: mergedWithNext}.split(dst, p)
}

type sequencePre []preTokenizer

func (q sequencePre) split(dst []piece, p piece) []piece {
	cur := []piece{p}
	for _, pt := range q {
		var next []piece
		for _, c := range cur {
			next = pt.split(next, c)
		}
		cur = next
	}
	return append(dst, cur...)
}

const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// parsePreTokenizer returns the pre-tokenizer and whether the model input is
// byte-level (a ByteLevel pre-tokenizer ends the chain).
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		return parseSequencePre(c)
	case "Split":
		sp, err := parseSplitPre(c)
		return sp, false, err
	case "ByteLevel":
		return parseByteLevelPre(c), true, nil
	case "Metaspace":
		m, err := parseMetaspacePre(c)
		return m, false, err
	case "Digits":
		re, err := compileRegex(`\p{N}+`)
		if c.IndividualDigits {
			re, err = compileRegex(`\p{N}`)
		}
		if err != nil {
			return nil, false, err
		}
		return splitter{m: regexMatcher{re}, behavior: isolated}, false, nil
	default:
		return nil, false, fmt.Errorf("pre_tokenizer type %q not supported", c.Type)
	}
}

// parseSequencePre parses a Sequence's members in order; a ByteLevel member
// must come last, since it turns the input into bytes for the model.
func parseSequencePre(c componentJSON) (preTokenizer, bool, error) {
	var seq sequencePre
	byteLevel := false
	for i, r := range c.Pretokenizers {
		if byteLevel {
			return nil, false, fmt.Errorf("pre_tokenizer Sequence[%d]: only the last member may be ByteLevel", i)
		}
		pt, bl, err := parsePreTokenizer(r)
		if err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Sequence[%d]: %w", i, err)
		}
		byteLevel = bl
		if pt != nil {
			seq = append(seq, pt)
		}
	}
	switch len(seq) {
	case 0:
		return nil, byteLevel, nil
	case 1:
		return seq[0], byteLevel, nil
	}
	return seq, byteLevel, nil
}

// parseSplitPre parses a Split on a literal string or a regex; a regex with a
// hand-written equivalent in fastPatterns uses that instead.
func parseSplitPre(c componentJSON) (preTokenizer, error) {
	if c.Pattern == nil {
		return nil, fmt.Errorf("pre_tokenizer Split: missing pattern")
	}
	b, err := parseBehavior(c.Behavior)
	if err != nil {
		return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
	}
	var m matcher
	switch {
	case c.Pattern.String != nil:
		m = stringMatcher(*c.Pattern.String)
	case c.Pattern.Regex != nil:
		re, err := compileRegex(*c.Pattern.Regex)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		m = regexMatcher{re}
		if fast, ok := fastPatterns[*c.Pattern.Regex]; ok {
			m = fastMatcher{fast}
		}
	default:
		return nil, fmt.Errorf("pre_tokenizer Split: pattern has neither String nor Regex")
	}
	return splitter{m: m, behavior: b, invert: c.Invert}, nil
}

// parseByteLevelPre parses a ByteLevel pre-tokenizer: an optional leading
// space, then (unless use_regex is false) the GPT-2 split. It returns nil when
// neither applies; the input is still byte-level.
func parseByteLevelPre(c componentJSON) preTokenizer {
	var seq sequencePre
	if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
		seq = append(seq, prefixSpace{})
	}
	if c.UseRegex == nil || *c.UseRegex {
		seq = append(seq, splitter{m: fastMatcher{matchGPT2}, behavior: isolated})
	}
	if len(seq) == 0 {
		return nil
	}
	return seq
}

// parseMetaspacePre parses a Metaspace pre-tokenizer. The legacy
// add_prefix_space=false means prepend_scheme "never"; an explicit
// prepend_scheme wins.
func parseMetaspacePre(c componentJSON) (preTokenizer, error) {
	m := metaspace{repl: "▁", prepend: "always", divide: true}
	if c.Replacement != nil {
		if utf8.RuneCountInString(*c.Replacement) != 1 {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: replacement %q is not one character", *c.Replacement)
		}
		m.repl = *c.Replacement
	}
	if c.Split != nil {
		m.divide = *c.Split
	}
	switch {
	case c.PrependScheme != nil:
		m.prepend = *c.PrependScheme
		if m.prepend != "always" && m.prepend != "first" && m.prepend != "never" {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: prepend_scheme %q not supported", m.prepend)
		}
	case c.AddPrefixSpace != nil && !*c.AddPrefixSpace:
		m.prepend = "never"
	}
	return m, nil
}
