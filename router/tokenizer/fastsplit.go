package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Hand-written matchers for the split regexes of the common byte-level
// models. They reproduce, alternative by alternative and with the same
// backtracking outcome, what regexp2 (whose results match the Rust crate)
// finds, about ten times faster. The tests compare them with regexp2 on
// every golden string and under fuzzing; any other pattern uses regexp2.
var fastPatterns = map[string]func(s string, i int) int{
	gpt2Pattern: matchGPT2,
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                                                                                                                                                func(s string, i int) int { return matchCL100K(s, i, 3) },
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                                                                                                                                                     func(s string, i int) int { return matchCL100K(s, i, 1) },
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`: matchO200K,
}

// fastMatcher runs a hand-written pattern over a piece.
type fastMatcher struct {
	match func(s string, i int) int // match end at i, or -1
}

func (m fastMatcher) spans(dst []span, s string) []span {
	if s == "" {
		return append(dst, span{0, 0, false})
	}
	gap := -1
	for i := 0; i < len(s); {
		e := m.match(s, i)
		if e <= i {
			if gap < 0 {
				gap = i
			}
			_, n := decode(s, i)
			i += n
			continue
		}
		if gap >= 0 {
			dst = append(dst, span{gap, i, false})
			gap = -1
		}
		dst = append(dst, span{i, e, true})
		i = e
	}
	if gap >= 0 {
		dst = append(dst, span{gap, len(s), false})
	}
	return dst
}

func decode(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// Character classes as regexp2 defines them: \s is unicode.IsSpace, \p{X}
// the Go Unicode tables.
func isL(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isN(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isS(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

func isPunct(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// upperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], lowerish [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func upperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

func lowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// run advances from i while class holds.
func run(s string, i int, class func(rune) bool) int {
	for i < len(s) {
		r, n := decode(s, i)
		if !class(r) {
			break
		}
		i += n
	}
	return i
}

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (i at the apostrophe),
// case-insensitively if fold, returning the end or -1.
func contraction(s string, i int, fold bool) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	low := func(c byte) byte {
		if fold && 'A' <= c && c <= 'Z' {
			return c + 'a' - 'A'
		}
		return c
	}
	switch low(s[i+1]) {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && low(s[i+2]) == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && low(s[i+2]) == 'l' {
			return i + 3
		}
	}
	return -1
}

// spaceTail matches \s*[\r\n]+ | \s+(?!\S) | \s+ at i, where s[i] is
// space; without nl the first alternative is absent (GPT-2).
func spaceTail(s string, i int, nl bool) int {
	j, lastNL := i, -1
	for j < len(s) {
		r, n := decode(s, j)
		if !isS(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j
		}
		j += n
	}
	if nl && lastNL >= 0 {
		return lastNL + 1
	}
	if j == len(s) {
		return j
	}
	_, n := utf8.DecodeLastRuneInString(s[:j])
	if j-n > i {
		return j - n
	}
	return j
}

// optSpaceRun matches " ?X+" at i for the class X, or returns -1.
func optSpaceRun(s string, i int, class func(rune) bool) int {
	if s[i] == ' ' && i+1 < len(s) {
		if r, n := decode(s, i+1); class(r) {
			return run(s, i+1+n, class)
		}
	}
	if r, n := decode(s, i); class(r) {
		return run(s, i+n, class)
	}
	return -1
}

func crlf(r rune) bool      { return r == '\r' || r == '\n' }
func crlfSlash(r rune) bool { return r == '\r' || r == '\n' || r == '/' }

// matchGPT2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(s string, i int) int {
	if e := contraction(s, i, false); e > 0 {
		return e
	}
	for _, class := range []func(rune) bool{isL, isN, isPunct} {
		if e := optSpaceRun(s, i, class); e > 0 {
			return e
		}
	}
	if r, _ := decode(s, i); isS(r) {
		return spaceTail(s, i, false)
	}
	return -1
}

// matchCL100K: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|
// \p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func matchCL100K(s string, i, maxDigits int) int {
	if e := contraction(s, i, true); e > 0 {
		return e
	}
	r, n := decode(s, i)
	if isL(r) {
		return run(s, i+n, isL)
	}
	if !isN(r) && !crlf(r) && i+n < len(s) {
		if r2, n2 := decode(s, i+n); isL(r2) {
			return run(s, i+n+n2, isL)
		}
	}
	if isN(r) {
		j := i + n
		for k := 1; k < maxDigits && j < len(s); k++ {
			r2, n2 := decode(s, j)
			if !isN(r2) {
				break
			}
			j += n2
		}
		return j
	}
	if e := optSpaceRun(s, i, isPunct); e > 0 {
		return run(s, e, crlf)
	}
	if isS(r) {
		return spaceTail(s, i, true)
	}
	return -1
}

// matchO200K is gpt-oss's pattern (see fastPatterns).
func matchO200K(s string, i int) int {
	r, n := decode(s, i)
	prefix := !isL(r) && !isN(r) && !crlf(r)
	// Alternative 1, with and then without the optional prefix character.
	if prefix {
		if e := o200kLowerTail(s, i+n); e > 0 {
			return contractionOpt(s, e)
		}
	}
	if e := o200kLowerTail(s, i); e > 0 {
		return contractionOpt(s, e)
	}
	// Alternative 2.
	if prefix {
		if e := o200kUpperHead(s, i+n); e > 0 {
			return contractionOpt(s, e)
		}
	}
	if e := o200kUpperHead(s, i); e > 0 {
		return contractionOpt(s, e)
	}
	if isN(r) {
		j := i + n
		for k := 1; k < 3 && j < len(s); k++ {
			r2, n2 := decode(s, j)
			if !isN(r2) {
				break
			}
			j += n2
		}
		return j
	}
	if e := optSpaceRun(s, i, isPunct); e > 0 {
		return run(s, e, crlfSlash)
	}
	if isS(r) {
		return spaceTail(s, i, true)
	}
	return -1
}

// o200kLowerTail matches upperish* lowerish+ at i with regex backtracking:
// the longest upperish run whose next character is lowerish, else the last
// lowerish character inside the run.
func o200kLowerTail(s string, i int) int {
	p, lastLower := i, -1
	for p < len(s) {
		r, n := decode(s, p)
		if !upperish(r) {
			break
		}
		if lowerish(r) {
			lastLower = p
		}
		p += n
	}
	if p < len(s) {
		if r, _ := decode(s, p); lowerish(r) {
			return run(s, p, lowerish)
		}
	}
	if lastLower >= 0 {
		return run(s, lastLower, lowerish)
	}
	return -1
}

// o200kUpperHead matches upperish+ lowerish* at i.
func o200kUpperHead(s string, i int) int {
	p := run(s, i, upperish)
	if p == i {
		return -1
	}
	return run(s, p, lowerish)
}

func contractionOpt(s string, e int) int {
	if c := contraction(s, e, true); c > 0 {
		return c
	}
	return e
}
