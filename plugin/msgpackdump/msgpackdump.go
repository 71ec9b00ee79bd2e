// Package msgpackdump reads msgpack written as annotated hex (hex byte
// tokens, with "quoted" raw strings between them), and holds the
// value-mapping example of Nomad's task-config encoding (docs/PROTOCOLS.md,
// "How Nomad encodes configs"). The
// task-config encoder's tests (plugin/nomadconfig) and decoder's tests
// (plugin/ctymsgpack) check against this one transcription.
//
// It is test support: it imports only the standard library, and production
// code has no use for it.
package msgpackdump

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// ValueMappingExample is the bytes Nomad 2.0's config pipeline produced
// for one job config that exercises every value kind (strings, lists,
// maps, blocks, absent attributes, defaults, numbers that are and are not
// exact float64 values), captured byte for byte.
const ValueMappingExample = `8f
	a4 "args" 92 a2 "-c" a7 "echo hi"
	a4 "auth" 82 a8 "password" a1 "p" a8 "username" a1 "u"
	a5 "count" 03
	a4 "dflt" a8 "fallback"
	a7 "enabled" c3
	a5 "image" be "docker.io/library/busybox:1.36"
	a6 "interp" ac "23456:/local"
	a6 "labels" 81 a1 "a" a1 "b"
	ac "missing_list" c0
	ab "missing_str" c0
	a5 "mount" 92 83 a8 "readonly" c0 a6 "source" a4 "/src" a6 "target" a4 "/dst"
	              83 a8 "readonly" c3 a6 "source" a3 "/s2" a6 "target" a3 "/d2"
	a3 "neg" f9
	a8 "port_map" 81 a4 "http" cd 1f90
	a5 "ratio" cb 3ff8000000000000
	a5 "tenth" a3 "0.1"`

// token is a "quoted" string (which may hold spaces) or a run of non-space
// characters.
var token = regexp.MustCompile(`"[^"]*"|\S+`)

// Parse turns a dump into bytes: each token is either hex (an even number
// of hex digits, any length) or a double-quoted string whose bytes are
// taken as they are. White space between tokens is ignored.
func Parse(dump string) ([]byte, error) {
	var out []byte
	for i, tok := range token.FindAllString(dump, -1) {
		if len(tok) >= 2 && strings.HasPrefix(tok, `"`) && strings.HasSuffix(tok, `"`) {
			out = append(out, tok[1:len(tok)-1]...)
			continue
		}
		b, err := hex.DecodeString(tok)
		if err != nil {
			return nil, fmt.Errorf("msgpackdump: token %d %q is neither hex bytes nor a \"quoted\" string: %w", i+1, tok, err)
		}
		out = append(out, b...)
	}
	return out, nil
}

// Bytes is Parse for tests: a dump that does not parse fails the test.
func Bytes(t testing.TB, dump string) []byte {
	t.Helper()
	b, err := Parse(dump)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
