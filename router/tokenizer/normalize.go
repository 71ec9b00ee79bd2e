package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites one piece of text (the text between added tokens).
type normalizer interface {
	normalize(s string) string
}

type (
	unicodeNorm   struct{ form norm.Form }
	lowercaseNorm struct{}
	prependNorm   struct{ prefix string }
	stringReplace struct{ old, new string }
	regexpReplace struct {
		re  *regexp2.Regexp
		new string
	}
	stripNorm    struct{ left, right bool }
	sequenceNorm []normalizer
)

func (n unicodeNorm) normalize(s string) string { return n.form.String(s) }
func (lowercaseNorm) normalize(s string) string { return strings.ToLower(s) }

// Prepend adds its prefix to every non-empty piece, as the Rust crate does.
func (n prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return n.prefix + s
}

func (n stringReplace) normalize(s string) string {
	if n.old == "" {
		return s
	}
	return strings.ReplaceAll(s, n.old, n.new)
}

func (n regexpReplace) normalize(s string) string {
	out, err := n.re.Replace(s, n.new, -1, -1)
	if err != nil { // only a match timeout, which is not set
		return s
	}
	return out
}

func (n stripNorm) normalize(s string) string {
	if n.left {
		s = strings.TrimLeftFunc(s, isWhitespace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, isWhitespace)
	}
	return s
}

func (n sequenceNorm) normalize(s string) string {
	for _, x := range n {
		s = x.normalize(s)
	}
	return s
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		return unicodeNorm{norm.NFC}, nil
	case "NFD":
		return unicodeNorm{norm.NFD}, nil
	case "NFKC":
		return unicodeNorm{norm.NFKC}, nil
	case "NFKD":
		return unicodeNorm{norm.NFKD}, nil
	case "Lowercase":
		return lowercaseNorm{}, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, fmt.Errorf("normalizer Prepend: missing prepend")
		}
		return prependNorm{*c.Prepend}, nil
	case "Replace":
		if c.Pattern == nil || c.Content == nil {
			return nil, fmt.Errorf("normalizer Replace: missing pattern or content")
		}
		if c.Pattern.String != nil {
			return stringReplace{*c.Pattern.String, *c.Content}, nil
		}
		if c.Pattern.Regex != nil {
			re, err := compileRegex(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("normalizer Replace: %w", err)
			}
			return regexpReplace{re, strings.ReplaceAll(*c.Content, "$", "$$")}, nil
		}
		return nil, fmt.Errorf("normalizer Replace: pattern has neither String nor Regex")
	case "Strip":
		var s struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return stripNorm{s.Left, s.Right}, nil
	case "Sequence":
		seq := make(sequenceNorm, 0, len(c.Normalizers))
		for i, r := range c.Normalizers {
			n, err := parseNormalizer(r)
			if err != nil {
				return nil, fmt.Errorf("normalizer Sequence[%d]: %w", i, err)
			}
			if n != nil {
				seq = append(seq, n)
			}
		}
		if len(seq) == 0 {
			return nil, nil
		}
		return seq, nil
	default:
		return nil, fmt.Errorf("normalizer type %q not supported", c.Type)
	}
}

// compileRegex compiles a tokenizer.json pattern. regexp2's default
// (.NET-like) mode has Unicode \s and lookahead, matching Oniguruma, which
// the Rust crate uses; RE2 mode would make \s ASCII-only.
func compileRegex(pattern string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pattern, err)
	}
	return re, nil
}

// isWhitespace is Rust's char::is_whitespace (Unicode White_Space).
func isWhitespace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}
