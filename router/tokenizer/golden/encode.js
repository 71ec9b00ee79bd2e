// encode.js MODELS_DIR OUT_DIR: writes OUT_DIR/<model>.json.gz, the golden ids
// the Go tokenizer must reproduce. The oracle is npm tokenizers@0.23.2, Hugging
// Face's binding to the Rust tokenizers crate that vLLM's Python stack uses.
// Each model gets the same hand cases and 3,000 seeded stress strings, plus
// strings mixing in that model's own added tokens.
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Tokenizer } = require('tokenizers');
const { stressStrings } = require('./stress.js');

const MODELS = ['gpt2', 'llama3', 'llama3_1', 'qwen3', 'deepseek_v3', 'gptoss', 'llama2', 'gemma3'];

// chatRenders returns the Jinja2 renders of each model's own chat template
// (written by render.py), so the whole chat path is checked too.
function chatRenders(rendersFile) {
  const byModel = {};
  if (!fs.existsSync(rendersFile)) return byModel;
  const g = JSON.parse(zlib.gunzipSync(fs.readFileSync(rendersFile)).toString('utf8'));
  for (const c of g.cases) {
    if (!c.template.startsWith('model/') || typeof c.text !== 'string') continue;
    const m = c.template.slice('model/'.length);
    (byModel[m] = byModel[m] || []).push(c.text);
  }
  return byModel;
}

async function main() {
  const [modelsDir, outDir, rendersFile] = process.argv.slice(2);
  const chats = chatRenders(rendersFile || '');
  fs.mkdirSync(outDir, { recursive: true });
  for (const model of MODELS) {
    const file = path.join(modelsDir, model, 'tokenizer.json');
    const tok = Tokenizer.fromFile(file);
    const added = JSON.parse(fs.readFileSync(file, 'utf8')).added_tokens.map((t) => t.content);
    const cases = [];
    for (const text of stressStrings(added, 3000).concat(chats[model] || [])) {
      const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const idsSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      const c = { text, ids: Array.from(ids) };
      if (idsSpecial.length !== ids.length || idsSpecial.some((v, i) => v !== ids[i])) c.ids_special = Array.from(idsSpecial);
      const dec = await tok.decode(Array.from(ids), false);
      if (dec !== text) c.decoded = dec;
      const decSkip = await tok.decode(Array.from(idsSpecial), true);
      if (decSkip !== dec) c.decoded_skip_special = decSkip;
      cases.push(c);
    }
    const out = path.join(outDir, model + '.json.gz');
    const body = JSON.stringify({ model, oracle: 'tokenizers@0.23.2', cases });
    fs.writeFileSync(out, zlib.gzipSync(body, { level: 9 }));
    console.log(`encode.js: ${model}: ${cases.length} cases -> ${out}`);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
