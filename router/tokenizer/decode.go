package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decoder turns the token strings of ids back into text pieces, as one link
// of the Rust crate's decode chain.
type decoder interface {
	decodeChain(tokens []string) []string
}

type (
	byteLevelDecoder    struct{}
	replaceDecoder      struct{ old, new string }
	byteFallbackDecoder struct{}
	fuseDecoder         struct{}
	stripDecoder        struct {
		content     rune
		start, stop int
	}
	metaspaceDecoder struct {
		repl         rune
		stripLeading bool
	}
	sequenceDecoder []decoder
)

func (byteLevelDecoder) decodeChain(tokens []string) []string {
	var buf []byte
	for _, t := range tokens {
		if raw, ok := byteLevelDecode(t); ok {
			buf = append(buf, raw...)
		} else {
			buf = append(buf, t...)
		}
	}
	return []string{lossyUTF8(buf)}
}

func (d replaceDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(t, d.old, d.new)
	}
	return tokens
}

func (byteFallbackDecoder) decodeChain(tokens []string) []string {
	out := tokens[:0:0]
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if b, ok := fallbackByte(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// fallbackByte parses a <0xXX> byte token.
func fallbackByte(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(t[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

func (fuseDecoder) decodeChain(tokens []string) []string {
	return []string{strings.Join(tokens, "")}
}

func (d stripDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		rs := []rune(t)
		lo := 0
		for lo < len(rs) && lo < d.start && rs[lo] == d.content {
			lo++
		}
		hi := len(rs)
		for n := 0; hi > lo && n < d.stop && rs[hi-1] == d.content; n++ {
			hi--
		}
		tokens[i] = string(rs[lo:hi])
	}
	return tokens
}

func (d metaspaceDecoder) decodeChain(tokens []string) []string {
	for i, t := range tokens {
		if i == 0 && d.stripLeading {
			t = strings.TrimPrefix(t, string(d.repl))
		}
		tokens[i] = strings.ReplaceAll(t, string(d.repl), " ")
	}
	return tokens
}

func (s sequenceDecoder) decodeChain(tokens []string) []string {
	for _, d := range s {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}

func parseDecoder(raw json.RawMessage) (decoder, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch c.Type {
	case "ByteLevel":
		return byteLevelDecoder{}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil || c.Content == nil {
			return nil, fmt.Errorf("decoder Replace: only a String pattern with content is supported")
		}
		return replaceDecoder{*c.Pattern.String, *c.Content}, nil
	case "Strip":
		if c.Content == nil || utf8.RuneCountInString(*c.Content) != 1 {
			return nil, fmt.Errorf("decoder Strip: content must be one character")
		}
		r, _ := utf8.DecodeRuneInString(*c.Content)
		return stripDecoder{content: r, start: c.Start, stop: c.Stop}, nil
	case "Metaspace":
		d := metaspaceDecoder{repl: '▁', stripLeading: true}
		if c.Replacement != nil {
			d.repl, _ = utf8.DecodeRuneInString(*c.Replacement)
		}
		if c.PrependScheme != nil && *c.PrependScheme == "never" {
			d.stripLeading = false
		}
		if c.PrependScheme == nil && c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			d.stripLeading = false
		}
		return d, nil
	case "Sequence":
		var seq sequenceDecoder
		for i, r := range c.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, fmt.Errorf("decoder Sequence[%d]: %w", i, err)
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	default:
		return nil, fmt.Errorf("decoder type %q not supported", c.Type)
	}
}

// lossyUTF8 is Rust's String::from_utf8_lossy: each maximal invalid
// subsequence (a truncated but otherwise valid prefix, or a single byte)
// becomes one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[:n])
			b = b[n:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[invalidPrefixLen(b):]
	}
	return sb.String()
}

// invalidPrefixLen is the length of the maximal prefix of b that could start
// a valid UTF-8 sequence (at least 1), per the Unicode standard's table of
// well-formed byte sequences.
func invalidPrefixLen(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				return n
			}
		} else if x < 0x80 || x > 0xBF {
			return n
		}
		n++
	}
	return n
}
