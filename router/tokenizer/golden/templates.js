// templates.js INDEX_JS OUT: extracts the real chat templates that
// @huggingface/ollama-utils ships (its OLLAMA_CHAT_TEMPLATE_MAPPING array) into
// one JSON object {model: template}, in the package's order.
'use strict';
const fs = require('fs');
const vm = require('vm');
const [src, out] = process.argv.slice(2);
const js = fs.readFileSync(src, 'utf8');
const start = js.indexOf('var OLLAMA_CHAT_TEMPLATE_MAPPING = [');
if (start < 0) throw new Error('OLLAMA_CHAT_TEMPLATE_MAPPING not found in ' + src);
const open = js.indexOf('[', start);
// Find the matching close bracket, skipping string literals.
let depth = 0, i = open, q = null;
for (; i < js.length; i++) {
  const c = js[i];
  if (q) { if (c === '\\') i++; else if (c === q) q = null; continue; }
  if (c === '"' || c === "'" || c === '`') { q = c; continue; }
  if (c === '[') depth++;
  else if (c === ']' && --depth === 0) break;
}
const arr = vm.runInNewContext('(' + js.slice(open, i + 1) + ')');
const result = {};
for (const e of arr) if (e.model && typeof e.gguf === 'string') result[e.model] = e.gguf;
fs.writeFileSync(out, JSON.stringify(result, null, 1));
console.log(`templates.js: ${Object.keys(result).length} templates -> ${out}`);
