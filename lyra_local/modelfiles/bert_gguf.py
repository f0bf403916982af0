"""Convert a Hugging Face BERT sentence-embedding model (safetensors) to GGUF.

No torch: weights are read with safetensors' NumPy API and written with gguf-py.
What llama.cpp's ``bert`` architecture expects, and why:

- WordPiece tokens in llama.cpp's "phantom space" form: control tokens such as
  ``[CLS]`` unchanged, a continuation ``##x`` becomes ``x``, any other token gets
  a leading ``▁`` (the word-start marker).
- Position and token-type embeddings, and every 1-D tensor, stay float32: ggml
  aborts on an f32 + f16 add. Other matrices are stored as float16.
- Pooling comes from sentence-transformers' ``1_Pooling/config.json``.
- A cross-encoder (``BertForSequenceClassification``: a ``classifier`` on the
  pooler) becomes a re-ranker: rank pooling, the pooler as llama.cpp's ``cls``
  (dense, then tanh) and the classifier as ``cls.output``, which is what
  llama.cpp computes on the pair's first token.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from safetensors.numpy import load_file

from ..errors import FetchError

CONVERTER_VERSION = 1
_SKIPPED = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}
_KEEP_F32 = {"embeddings.position_embeddings.weight", "embeddings.token_type_embeddings.weight"}
_RANK_HEAD = {"pooler.dense.weight": "cls.weight", "pooler.dense.bias": "cls.bias",
              "classifier.weight": "cls.output.weight", "classifier.bias": "cls.output.bias"}


def is_cross_encoder(weights: dict[str, Any]) -> bool:
    """A sequence classifier on BERT (a re-ranker), not a sentence-embedding model."""
    return "classifier.weight" in weights


def phantom_token(token: str, is_control: bool) -> str:
    """A WordPiece token in the form llama.cpp's WPM tokenizer looks up."""
    if is_control:
        return token
    if token.startswith("##"):
        return token[2:]
    return "\u2581" + token


def pooling_type(model_dir: Path) -> gguf.PoolingType:
    """The sentence-transformers pooling mode, MEAN when the model does not say."""
    pooling_file = model_dir / "1_Pooling" / "config.json"
    if not pooling_file.is_file():
        return gguf.PoolingType.MEAN
    modes = json.loads(pooling_file.read_text())
    if modes.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if modes.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    raise FetchError(f"unsupported pooling in {pooling_file}: {modes}",
                     hint="only mean and CLS pooling are supported by llama.cpp's bert")


def read_vocab(model_dir: Path) -> tuple[list[str], list[int]]:
    """Tokens (phantom-space form) and their gguf token types, in id order."""
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    model = tokenizer["model"]
    if model.get("type") != "WordPiece":
        raise FetchError(f"{model_dir} has a {model.get('type')} tokenizer; this converter handles WordPiece")
    by_id = sorted(model["vocab"].items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise FetchError(f"{model_dir}/tokenizer.json: vocabulary ids are not contiguous")
    control = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    tokens = [phantom_token(tok, tok in control) for tok, _ in by_id]
    types = [int(gguf.TokenType.CONTROL if tok in control else gguf.TokenType.NORMAL) for tok, _ in by_id]
    return tokens, types


def convert_bert(model_dir: Path, out_path: Path, *, name: str) -> None:
    """Write ``out_path`` (atomically) from a BERT model directory: an embedding model, or a re-ranker."""
    hparams: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
    if hparams.get("model_type") != "bert":
        raise FetchError(f"{model_dir}/config.json: model_type is {hparams.get('model_type')!r}, expected 'bert'")
    n_layers = int(hparams["num_hidden_layers"])
    tokens, types = read_vocab(model_dir)
    weights = {hf_name.removeprefix("bert."): data
               for hf_name, data in load_file(str(model_dir / "model.safetensors")).items()}
    rank = is_cross_encoder(weights)

    tmp = out_path.with_name(out_path.name + ".partial")
    writer = gguf.GGUFWriter(str(tmp), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_name(name)
    writer.add_context_length(int(hparams["max_position_embeddings"]))
    writer.add_embedding_length(int(hparams["hidden_size"]))
    writer.add_feed_forward_length(int(hparams["intermediate_size"]))
    writer.add_block_count(n_layers)
    writer.add_head_count(int(hparams["num_attention_heads"]))
    writer.add_layer_norm_eps(float(hparams.get("layer_norm_eps", 1e-12)))
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK if rank else pooling_type(model_dir))
    if rank:
        labels = hparams.get("id2label") or {"0": "score"}
        writer.add_classifier_output_labels([labels[k] for k in sorted(labels, key=int)])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(int(hparams.get("type_vocab_size", 1)))
    # llama.cpp takes [CLS] as BOS for the bert tokenizer model, so no separate cls id is written.
    special = gguf.SpecialVocab(model_dir, n_vocab=len(tokens),
                                special_token_types=("bos", "eos", "unk", "sep", "pad", "mask"))
    special.add_to_gguf(writer, quiet=True)

    name_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    for plain in sorted(weights):
        gguf_name: str | None
        if rank and plain in _RANK_HEAD:
            gguf_name = _RANK_HEAD[plain]
        elif plain in _SKIPPED:
            continue
        else:
            gguf_name = name_map.get_name(plain, try_suffixes=(".weight", ".bias"))
        if gguf_name is None:
            raise FetchError(f"{model_dir}: tensor {plain!r} has no GGUF name for the bert architecture")
        data = weights[plain]
        keep_f32 = data.ndim == 1 or plain in _KEEP_F32
        writer.add_tensor(gguf_name, data.astype(np.float32 if keep_f32 else np.float16))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out_path)
