package chattemplate

import (
	"regexp"
	"slices"
	"strings"
)

// detectFormat chooses the content format as vLLM's _detect_content_format
// does on the template's syntax tree, here on its statement tags:
//
//  1. the message lists are `messages` and every variable set from a
//     message list (as is, sliced, or through filters);
//  2. the message variables are the targets of for-loops over a message
//     list;
//  3. the template takes "openai" content when some for-loop iterates over
//     a message variable's content (`m.content` or `m['content']`, as is,
//     sliced, or through filters); otherwise "string".
func detectFormat(src string) contentFormat {
	var sets, fors [][2]string
	for _, sp := range tagSpans(src) {
		tag := src[sp[0]:sp[1]]
		if !strings.HasPrefix(tag, "{%") {
			continue
		}
		stmt := strings.Trim(tag[2:len(tag)-2], "-+ \t\r\n")
		if m := setStmt.FindStringSubmatch(stmt); m != nil {
			sets = append(sets, [2]string{m[1], m[2]})
		} else if m := forStmt.FindStringSubmatch(stmt); m != nil {
			fors = append(fors, [2]string{m[1], m[2]})
		}
	}
	lists := []string{"messages"}
	for i := 0; i < len(lists); i++ {
		for _, s := range sets {
			if accesses(s[1], lists[i], "") && !slices.Contains(lists, s[0]) {
				lists = append(lists, s[0])
			}
		}
	}
	var msgVars []string
	for _, f := range fors {
		for _, l := range lists {
			if accesses(f[1], l, "") {
				msgVars = append(msgVars, f[0])
				break
			}
		}
	}
	for _, f := range fors {
		for _, m := range msgVars {
			if accesses(f[1], m, "content") {
				return openaiContent
			}
		}
	}
	return stringContent
}

var (
	setStmt = regexp.MustCompile(`^set\s+([A-Za-z_]\w*)\s*=\s*([\s\S]+)$`)
	forStmt = regexp.MustCompile(`^for\s+([A-Za-z_]\w*)\s+in\s+([\s\S]+)$`)
)

// accesses reports whether expr is the variable name (or, with key, its
// key item or attribute), optionally sliced, and then ends, is filtered,
// tested, or closes a for-loop header (its `if` condition or `recursive`).
func accesses(expr, name, key string) bool {
	rest := strings.TrimLeft(expr, "( \t\r\n")
	if !strings.HasPrefix(rest, name) || (len(rest) > len(name) && isIdent(rest[len(name)])) {
		return false
	}
	rest = rest[len(name):]
	if key != "" {
		var ok bool
		if rest, ok = cutKey(strings.TrimLeft(rest, " \t\r\n"), key); !ok {
			return false
		}
	}
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if !strings.HasPrefix(rest, "[") {
			break
		}
		end := matchBracket(rest)
		if end < 0 || !strings.Contains(rest[1:end], ":") {
			return false
		}
		rest = rest[end+1:]
	}
	rest = strings.TrimLeft(rest, ") \t\r\n")
	for _, ok := range []string{"|", "is ", "if ", "recursive"} {
		if strings.HasPrefix(rest, ok) {
			return true
		}
	}
	return rest == ""
}

// cutKey removes a leading `.key` or `['key']` / `["key"]` from s.
func cutKey(s, key string) (string, bool) {
	if r, ok := strings.CutPrefix(s, "."+key); ok && (r == "" || !isIdent(r[0])) {
		return r, true
	}
	if !strings.HasPrefix(s, "[") {
		return s, false
	}
	end := matchBracket(s)
	if end < 0 {
		return s, false
	}
	inner := strings.TrimSpace(s[1:end])
	if inner == "'"+key+"'" || inner == `"`+key+`"` {
		return s[end+1:], true
	}
	return s, false
}

// matchBracket returns the index of the ']' closing the '[' at s[0], skipping
// string literals, or -1.
func matchBracket(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			if i = stringEnd(s, i); i < 0 {
				return -1
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
