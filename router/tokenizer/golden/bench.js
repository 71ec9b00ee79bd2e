// bench.js MODELS_DIR: single-thread encode throughput of the Rust tokenizers
// (npm tokenizers@0.23.2) on the same texts as the Go benchmark
// BenchmarkEncode: the first 32 KiB (about 8k tokens) and 128 KiB (about 32k
// tokens) of DIR/../bench.txt. One encode call runs on one thread.
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');

async function main() {
  const modelsDir = process.argv[2];
  const all = fs.readFileSync(path.join(modelsDir, '..', 'bench.txt'));
  for (const model of ['llama3_1', 'qwen3', 'gemma3']) {
    const tok = Tokenizer.fromFile(path.join(modelsDir, model, 'tokenizer.json'));
    for (const size of [32 << 10, 128 << 10]) {
      const text = all.subarray(0, size).toString('utf8');
      let n = 0, tokens = 0;
      await tok.encode(text, null, { addSpecialTokens: false }); // warm up
      const t0 = process.hrtime.bigint();
      const c0 = process.cpuUsage();
      let el = 0;
      while (el < 2e9) {
        tokens = (await tok.encode(text, null, { addSpecialTokens: false })).getIds().length;
        n++;
        el = Number(process.hrtime.bigint() - t0);
      }
      const c = process.cpuUsage(c0);
      const ns = el / n;
      const cpuNs = ((c.user + c.system) * 1000) / n;
      // cpu: process CPU time per op (all threads), robust to a busy machine.
      console.log(`rust ${model} ${size >> 10}KiB ${tokens} tokens: ${(ns / 1e6).toFixed(2)} ms/op wall, ` +
        `${(cpuNs / 1e6).toFixed(2)} ms/op cpu, ${(size / (cpuNs / 1e9) / 1e6).toFixed(2)} MB/s by cpu`);
    }
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
