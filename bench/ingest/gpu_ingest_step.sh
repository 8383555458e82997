#!/bin/bash
# The GPU ingest bench on the lent machine (bench/ingest/gpu_ingest_kit.sh builds what it carries and
# says the order): step 0 and 1 carry wheels, docs and the model folder to /tmp; step 2 installs
# the wheels into /tmp/kbsite and runs bench/ingest/gpu_ingest.py (python3 -m bench.ingest.gpu_ingest).
S=$1; T0=$(date +%s); mkdir -p /tmp/whl
if [ "$S" = 0 ]; then
  nproc; free -g | head -2; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; python3 -V
  python3 -m pip list 2>/dev/null > $OUT/piplist.txt; wc -l $OUT/piplist.txt
  rm -rf /tmp/docs /tmp/minilm; cp -r .gpu-ingest/docs /tmp/docs; cp -r .gpu-ingest/minilm /tmp/minilm
  python3 -c "
from transformers import BertConfig, BertModel
import torch; torch.manual_seed(0)
m = BertModel(BertConfig.from_pretrained('/tmp/minilm')); m.save_pretrained('/tmp/minilm')" 2>&1 | tail -2
  ls -la /tmp/minilm
fi
[ -d .gpu-ingest/w$S ] && cp .gpu-ingest/w$S/*.whl /tmp/whl/; ls /tmp/whl | wc -l
[ -d .gpu-ingest/docs2 ] && rm -rf /tmp/docs2 && cp -r .gpu-ingest/docs2 /tmp/docs2 && cp -r /tmp/docs /tmp/docs2/evaldocs
if [ "$S" = 2 ]; then
  [ -d /tmp/kbsite ] || python3 -m pip install -q --no-deps --no-index --no-compile --target /tmp/kbsite /tmp/whl/*.whl 2>&1 | tail -3
  export PYTHONPATH=/tmp/kbsite; eval "$(python3 -m core.offline)"   # no model hub, no telemetry
  python3 -c "import chromadb, sentence_transformers, pdfplumber, docx, jieba, pypdf; print('imports ok', chromadb.__version__, sentence_transformers.__version__)" 2>&1 | tail -3
  nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
  python3 -m compileall -q /tmp/kbsite > /dev/null 2>&1; timeout 560 python3 -m bench.ingest.gpu_ingest ${DOCS:-/tmp/docs} --workers ${WORKERS:-1,8} --model /tmp/minilm > $OUT/gpu_ingest.json 2> $OUT/gpu_ingest.log
  echo rc=$?; tail -15 $OUT/gpu_ingest.log; cat $OUT/gpu_ingest.json | head -60
fi
echo "step $S took $(( $(date +%s) - T0 ))s"
