package chattemplate

import "strings"

// The engine's whitespace control differs from Jinja2's in two ways that
// real templates hit, and both are fixed here by rewriting the source:
//
//   - Jinja2 drops one trailing newline of the template source
//     (keep_trailing_newline=False); the engine keeps it.
//   - Jinja2's "-" markers, lstrip_blocks and trim_blocks act only on the
//     text right next to a tag. When two tags are adjacent, the engine looks
//     past the neighbouring tag for the nearest text and strips that instead
//     (so "{% if %} {{ x }}{% endif %}" loses its space).
//
// The second is fixed by placing a sentinel text between adjacent tags, so
// the engine's search stops there, and deleting the sentinel from the
// output. The sentinel is two Unicode noncharacters, which no real prompt
// contains.
const sentinel = "\uFDD0\uFDDF"

// prepareSource applies both source fixes.
func prepareSource(src string) string {
	switch {
	case strings.HasSuffix(src, "\r\n"):
		src = src[:len(src)-2]
	case strings.HasSuffix(src, "\n"), strings.HasSuffix(src, "\r"):
		src = src[:len(src)-1]
	}
	spans := tagSpans(src)
	if len(spans) < 2 {
		return src
	}
	var sb strings.Builder
	sb.Grow(len(src) + 8*len(spans))
	last := 0
	for i := 1; i < len(spans); i++ {
		if spans[i-1][1] == spans[i][0] {
			sb.WriteString(src[last:spans[i][0]])
			sb.WriteString(sentinel)
			last = spans[i][0]
		}
	}
	sb.WriteString(src[last:])
	return sb.String()
}

// tagSpans returns the [start, end) byte ranges of the {{ }}, {% %} and
// {# #} tags in src, skipping string literals inside tags. An unterminated
// tag ends the scan (the engine reports it when compiling).
func tagSpans(src string) [][2]int {
	var spans [][2]int
	for i := 0; i+1 < len(src); {
		if src[i] != '{' || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			i++
			continue
		}
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[src[i+1]]
		end := -1
		if src[i+1] == '#' {
			if k := strings.Index(src[i+2:], closer); k >= 0 {
				end = i + 2 + k + 2
			}
		} else {
			end = tagEnd(src, i+2, closer)
		}
		if end < 0 {
			break
		}
		if src[i+1] == '%' && isRawTag(src[i:end]) {
			// {% raw %} ... {% endraw %}: its body is text, not tags.
			k := strings.Index(src[end:], "endraw")
			if k < 0 {
				break
			}
			if e := tagEnd(src, end+k, "%}"); e >= 0 {
				spans = append(spans, [2]int{i, end})
				i = e
				continue
			}
			break
		}
		spans = append(spans, [2]int{i, end})
		i = end
	}
	return spans
}

func tagEnd(src string, from int, closer string) int {
	for j := from; j+1 < len(src); j++ {
		switch c := src[j]; c {
		case '\'', '"':
			if j = stringEnd(src, j); j < 0 {
				return -1
			}
		default:
			if src[j:j+2] == closer {
				return j + 2
			}
		}
	}
	return -1
}

// stringEnd returns the index of the quote closing the string literal that
// opens at s[open], honouring backslash escapes as Jinja does, or -1.
func stringEnd(s string, open int) int {
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case s[open]:
			return i
		}
	}
	return -1
}

func isRawTag(tag string) bool {
	inner := strings.Trim(tag[2:len(tag)-2], "-+ \t\n")
	return inner == "raw"
}
