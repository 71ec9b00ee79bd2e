package msgpackdump

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		dump string
		want []byte
	}{
		{"empty", "", nil},
		{"hex tokens", "81 a1\n\t01", []byte{0x81, 0xa1, 0x01}},
		{"long hex token", "cd 1f90", []byte{0xcd, 0x1f, 0x90}},
		{"quoted", `a2 "hi"`, []byte{0xa2, 'h', 'i'}},
		{"quoted with space", `a7 "echo hi"`, []byte("\xa7echo hi")},
		{"empty quotes", `a0 ""`, []byte{0xa0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.dump)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("got %x; want %x", got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		dump, want string
	}{
		{"81 zz", `token 2 "zz" is neither hex bytes nor a "quoted" string`},
		{"abc", `token 1 "abc"`},
		{`a2 "hi`, `token 2 "\"hi"`},
		{`"`, `token 1 "\""`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.dump)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error %v; want it to contain %q", tt.dump, err, tt.want)
		}
	}
}

// TestValueMappingExample checks the transcription's frame: a 15-entry map
// whose last value is the string "0.1". The encoder's and decoder's tests
// check every byte in between.
func TestValueMappingExample(t *testing.T) {
	b := Bytes(t, ValueMappingExample)
	if b[0] != 0x8f {
		t.Errorf("first byte %x; want 8f (map of 15)", b[0])
	}
	if !bytes.HasSuffix(b, []byte("\xa5tenth\xa30.1")) {
		t.Errorf("ends %q; want tenth = \"0.1\"", b[len(b)-10:])
	}
}

// FuzzParse: any input parses or gives an error, and bytes written back as
// a hex dump parse to themselves.
func FuzzParse(f *testing.F) {
	f.Add(ValueMappingExample)
	f.Add(`a2 "hi" zz`)
	f.Add(`"`)
	f.Fuzz(func(t *testing.T, dump string) {
		b, err := Parse(dump)
		if err != nil {
			return
		}
		again, err := Parse(hex.EncodeToString(b))
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("hex of %x parsed to %x, %v", b, again, err)
		}
	})
}
