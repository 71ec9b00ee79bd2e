package tokenizer

import "strings"

// GPT-2's byte-to-character table: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100 and up, in byte order. Byte-level
// vocabularies are written in this alphabet.
var (
	byteToRune [256]rune
	runeToByte = make(map[rune]byte, 256)
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode maps a token written in the byte-level alphabet back to
// raw bytes; ok is false if a character is outside the alphabet.
func byteLevelDecode(tok string) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return "", false
		}
		sb.WriteByte(b)
	}
	return sb.String(), true
}
