package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// Tokenizer encodes text into token ids and back. Build one with Load.
type Tokenizer struct {
	added    []addedToken
	rawAdded *addedMatcher // added tokens with normalized=false, on raw text
	rawIdx   []int
	normAdd  *addedMatcher // added tokens with normalized=true, on normalized text
	normIdx  []int

	normalizer normalizer
	pre        preTokenizer
	model      *bpe
	post       wrap
	decoder    decoder

	idToToken []string
	special   map[uint32]bool
	tokenToID map[string]uint32 // added tokens; the model vocab is consulted after
}

// Load reads dir/tokenizer.json and, when present, dir/tokenizer_config.json.
// It never touches the network.
func Load(dir string) (*Tokenizer, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := New(tj, cj)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
	}
	return t, nil
}

// New builds a Tokenizer from the contents of tokenizer.json and
// tokenizer_config.json (which may be empty).
func New(tokenizerJSON, configJSONBytes []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var cfg configJSON
	if len(configJSONBytes) > 0 {
		if err := json.Unmarshal(configJSONBytes, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %w", err)
		}
	}
	t := &Tokenizer{special: map[uint32]bool{}, tokenToID: map[string]uint32{}}
	var err error
	if t.normalizer, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	var byteLevel bool
	if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if t.model, err = newBPE(f.Model, byteLevel); err != nil {
		return nil, err
	}
	if t.decoder, err = parseDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if err := t.indexTokens(f); err != nil {
		return nil, err
	}
	if t.post, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if w, ok, err := t.transformersWrap(cfg); err != nil {
		return nil, err
	} else if ok {
		t.post = w
	}
	return t, nil
}

func (t *Tokenizer) indexTokens(f fileJSON) error {
	maxID := uint32(0)
	for _, id := range f.Model.Vocab {
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	// Ids are dense in real files; a far larger one is a broken file, and
	// would make the id table huge.
	if n := len(f.Model.Vocab) + len(f.AddedTokens); int64(maxID) > 2*int64(n)+1024 {
		return fmt.Errorf("token id %d is far beyond the %d tokens in the file", maxID, n)
	}
	t.idToToken = make([]string, maxID+1)
	for tok, id := range f.Model.Vocab {
		t.idToToken[id] = tok
	}
	var rawPats, normPats []string
	for _, a := range f.AddedTokens {
		at := addedToken{id: a.ID, content: a.Content, special: a.Special,
			singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip}
		i := len(t.added)
		t.added = append(t.added, at)
		t.idToToken[a.ID] = a.Content
		t.tokenToID[a.Content] = a.ID
		if a.Special {
			t.special[a.ID] = true
		}
		if a.Normalized {
			p := a.Content
			if t.normalizer != nil {
				p = t.normalizer.normalize(p)
			}
			normPats = append(normPats, p)
			t.normIdx = append(t.normIdx, i)
		} else {
			rawPats = append(rawPats, a.Content)
			t.rawIdx = append(t.rawIdx, i)
		}
	}
	t.rawAdded = newAddedMatcher(rawPats)
	t.normAdd = newAddedMatcher(normPats)
	return nil
}

// Encode returns the token ids of text. With addSpecialTokens it adds what
// the post-processor adds (e.g. a BOS token); vLLM's chat path encodes the
// rendered prompt with it false, its completions path with it true.
// Invalid UTF-8 bytes are read as U+FFFD each, as Go's JSON decoder does.
func (t *Tokenizer) Encode(text string, addSpecialTokens bool) []uint32 {
	ids := make([]uint32, 0, len(text)/3+4)
	if addSpecialTokens {
		ids = append(ids, t.post.prefix...)
	}
	ids = t.appendEncoded(ids, validUTF8(text))
	if addSpecialTokens {
		ids = append(ids, t.post.suffix...)
	}
	return ids
}

func (t *Tokenizer) appendEncoded(ids []uint32, text string) []uint32 {
	return t.appendEncodedFrom(ids, text, 0, nil)
}

// appendEncodedFrom encodes text that starts at byte offset base of the
// caller's input. If cut is not nil it is called at the start of every added
// token found on the raw text, with the byte offset (relative to text) and
// the number of ids appended before it: text splits there without changing
// any id (see PrefixCache). Without a normalizer, tokens marked normalized
// are found on the raw text too, and are cut points as well.
func (t *Tokenizer) appendEncodedFrom(ids []uint32, text string, base int, cut func(off, n int)) []uint32 {
	start := len(ids)
	var segBuf [16]segment
	var pieces []piece // reused for every segment
	for _, seg := range t.rawAdded.split(segBuf[:0], text, t.added, t.rawIdx) {
		if seg.tok >= 0 {
			if cut != nil {
				cut(seg.start, len(ids)-start)
			}
			ids = append(ids, t.added[seg.tok].id)
			continue
		}
		s := text[seg.start:seg.end]
		if t.normalizer != nil {
			s = t.normalizer.normalize(s)
		}
		var nsegBuf [8]segment
		for _, ns := range t.normAdd.split(nsegBuf[:0], s, t.added, t.normIdx) {
			if ns.tok >= 0 {
				if cut != nil && t.normalizer == nil {
					cut(seg.start+ns.start, len(ids)-start)
				}
				ids = append(ids, t.added[ns.tok].id)
				continue
			}
			p := piece{s: s[ns.start:ns.end], first: base+seg.start == 0 && ns.start == 0}
			if t.pre == nil {
				ids = t.model.encodeWord(ids, p.s)
				continue
			}
			pieces = t.pre.split(pieces[:0], p)
			for _, w := range pieces {
				ids = t.model.encodeWord(ids, w.s)
			}
		}
	}
	return ids
}

// Decode turns ids back into text, through the tokenizer's decoder. With
// skipSpecialTokens, special added tokens are left out. Unknown ids are
// skipped.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if int(id) >= len(t.idToToken) || (skipSpecialTokens && t.special[id]) {
			continue
		}
		if tok := t.idToToken[id]; tok != "" {
			toks = append(toks, tok)
		}
	}
	if t.decoder == nil {
		return joinSpace(toks)
	}
	out := t.decoder.decodeChain(toks)
	n := 0
	for _, s := range out {
		n += len(s)
	}
	b := make([]byte, 0, n)
	for _, s := range out {
		b = append(b, s...)
	}
	return string(b)
}

// TokenID returns the id of a token string (an added token or a vocabulary
// entry, in the file's own alphabet).
func (t *Tokenizer) TokenID(tok string) (uint32, bool) {
	if id, ok := t.tokenToID[tok]; ok {
		return id, true
	}
	id, ok := t.model.vocab[tok]
	return id, ok
}

// Token returns the token string of id, in the file's own alphabet.
func (t *Tokenizer) Token(id uint32) (string, bool) {
	if int(id) >= len(t.idToToken) || t.idToToken[id] == "" {
		return "", false
	}
	return t.idToToken[id], true
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id uint32) bool { return t.special[id] }

func joinSpace(toks []string) string {
	n := 0
	for _, s := range toks {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for i, s := range toks {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, s...)
	}
	return string(b)
}

// validUTF8 replaces each invalid byte with U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
