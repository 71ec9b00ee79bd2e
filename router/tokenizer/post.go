package tokenizer

import (
	"encoding/json"
	"fmt"
)

// wrap is what a post-processor does to a single sequence when special
// tokens are asked for: ids before and after it.
type wrap struct {
	prefix, suffix []uint32
}

func (w wrap) around(inner wrap) wrap {
	return wrap{
		prefix: append(append([]uint32(nil), w.prefix...), inner.prefix...),
		suffix: append(append([]uint32(nil), inner.suffix...), w.suffix...),
	}
}

func parsePostProcessor(raw json.RawMessage) (wrap, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return wrap{}, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return wrap{}, fmt.Errorf("post_processor: %w", err)
	}
	switch c.Type {
	case "ByteLevel":
		return wrap{}, nil // only trims offsets; ids are unchanged
	case "Sequence":
		var w wrap
		for i, r := range c.Processors {
			x, err := parsePostProcessor(r)
			if err != nil {
				return wrap{}, fmt.Errorf("post_processor Sequence[%d]: %w", i, err)
			}
			w = x.around(w)
		}
		return w, nil
	case "TemplateProcessing":
		var w wrap
		seen := false
		for i, it := range c.Single {
			switch {
			case it.Sequence != nil:
				if it.Sequence.ID != "A" || seen {
					return wrap{}, fmt.Errorf("post_processor TemplateProcessing: single[%d]: unexpected sequence %q", i, it.Sequence.ID)
				}
				seen = true
			case it.SpecialToken != nil:
				st, ok := c.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return wrap{}, fmt.Errorf("post_processor TemplateProcessing: special token %q not in special_tokens", it.SpecialToken.ID)
				}
				if seen {
					w.suffix = append(w.suffix, st.IDs...)
				} else {
					w.prefix = append(w.prefix, st.IDs...)
				}
			default:
				return wrap{}, fmt.Errorf("post_processor TemplateProcessing: single[%d] is neither SpecialToken nor Sequence", i)
			}
		}
		if !seen {
			return wrap{}, fmt.Errorf("post_processor TemplateProcessing: single has no $A")
		}
		return w, nil
	case "RobertaProcessing", "BertProcessing":
		var rb struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &rb); err != nil {
			return wrap{}, fmt.Errorf("post_processor %s: %w", c.Type, err)
		}
		var sep, cls uint32
		if err := json.Unmarshal(rb.Sep[1], &sep); err != nil {
			return wrap{}, fmt.Errorf("post_processor %s: sep: %w", c.Type, err)
		}
		if err := json.Unmarshal(rb.Cls[1], &cls); err != nil {
			return wrap{}, fmt.Errorf("post_processor %s: cls: %w", c.Type, err)
		}
		return wrap{prefix: []uint32{cls}, suffix: []uint32{sep}}, nil
	default:
		return wrap{}, fmt.Errorf("post_processor type %q not supported", c.Type)
	}
}

// transformersBOSClasses are the Python tokenizer classes whose constructor
// rebuilds the post-processor from add_bos_token/add_eos_token (defaults
// true/false), whatever tokenizer.json says. vLLM loads tokenizers through
// these classes, so their behaviour is the one that counts.
var transformersBOSClasses = map[string]bool{
	"LlamaTokenizer": true, "LlamaTokenizerFast": true,
	"CodeLlamaTokenizer": true, "CodeLlamaTokenizerFast": true,
	"GemmaTokenizer": true, "GemmaTokenizerFast": true,
}

// transformersWrap applies that rebuild; ok is false when the class does not
// do it.
func (t *Tokenizer) transformersWrap(cfg configJSON) (wrap, bool, error) {
	if !transformersBOSClasses[cfg.TokenizerClass] {
		return wrap{}, false, nil
	}
	addBOS, addEOS := true, false
	if cfg.AddBOSToken != nil {
		addBOS = *cfg.AddBOSToken
	}
	if cfg.AddEOSToken != nil {
		addEOS = *cfg.AddEOSToken
	}
	var w wrap
	for _, x := range []struct {
		add  bool
		raw  json.RawMessage
		name string
		dst  *[]uint32
	}{{addBOS, cfg.BOSToken, "bos_token", &w.prefix}, {addEOS, cfg.EOSToken, "eos_token", &w.suffix}} {
		if !x.add {
			continue
		}
		content, ok, err := tokenContent(x.raw)
		if err != nil {
			return wrap{}, false, fmt.Errorf("tokenizer_config %s: %w", x.name, err)
		}
		if !ok {
			return wrap{}, false, fmt.Errorf("tokenizer_config: add_%s is true but %s is not set", x.name, x.name)
		}
		id, ok := t.TokenID(content)
		if !ok {
			return wrap{}, false, fmt.Errorf("tokenizer_config %s %q is not a token", x.name, content)
		}
		*x.dst = append(*x.dst, id)
	}
	return w, true, nil
}
