set -e
source /work/main/.venv/bin/activate
cd /work/runs
for spec in continue:/work/shared/data/train/gutenberg_en/train.jsonl.gz:1024 explain-code:/work/shared/data/train/cpython_stdlib/cpython-3.11.7-stdlib.jsonl.gz:768 summarize:/work/shared/data/train/python_docs/python3.11-doc_3.11.2-6+deb12u9_rst_sources.jsonl.gz:768; do
  count=${spec##*:}; src=${spec%:*}
  echo "== $src $count $(date -Is)"
  specdec data answers --dtype bf16 --batch-size 64 --max-new-tokens 256 --count $count --prompts $src
done
echo "== done $(date -Is)"
