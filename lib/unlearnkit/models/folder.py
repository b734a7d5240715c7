"""What a received model folder holds, checked without loading it or running anything (:func:`folder_problems`):
weights a safetensors file actually holds (its header read and held against the file), a tokenizer that parses and
names no code to run, and a configuration whose sizes the weights bear out. Every problem is one line; the front
door refuses them together before any kernel starts (:func:`unlearnkit.models.check_source`)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

#: Bytes per element of each safetensors dtype (a dtype not listed has its offsets checked, not its size).
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4,
               "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
#: The longest safetensors header read (the format's own limit).
MAX_HEADER = 100_000_000
#: Configuration sizes that shape the embedding, which every causal LM's weights hold: each must be a dimension of a
#: tensor of the weights. Other sizes must not exceed the largest dimension there, layers the tensors' count.
EMBEDDING_SIZES = ("vocab_size", "hidden_size", "n_embd", "d_model")
OTHER_SIZES = ("intermediate_size", "n_inner", "ffn_dim", "num_attention_heads", "n_head", "num_key_value_heads")
LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers")
POSITIONS = ("max_position_embeddings", "n_positions")
#: The most positions a configuration may declare (about a million: beyond every model the workbook can evaluate).
MAX_POSITIONS = 1 << 20
#: The files a tokenizer may be saved as; a folder with none of them has no tokenizer to load.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model", "spiece.model",
                   "vocab.txt")


def safetensors_header(path: Path) -> dict[str, Any]:
    """The tensors a safetensors file holds (``{name: {"dtype", "shape", "data_offsets"}}``), its header checked
    against the file: a ValueError in one line for a file that is not one, or whose header lies (a tensor past the
    file's end, offsets that overlap or leave bytes uncovered, a shape its bytes do not hold)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 2 <= n <= min(MAX_HEADER, size - 8):
            raise ValueError(f"{path.name}: not a safetensors file (its first 8 bytes give a header of {n} bytes in a "
                             f"file of {size})")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, ValueError, RecursionError):  # nested past the parser's stack too
            raise ValueError(f"{path.name}: not a safetensors file (its header is not JSON)") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path.name}: not a safetensors file (its header is not a mapping)")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    spans = []
    for name, entry in tensors.items():
        try:
            dtype, shape, (start, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
            if not all(isinstance(d, int) and d >= 0 for d in [*shape, start, end]) or start > end:
                raise TypeError
        except (TypeError, KeyError, ValueError):
            raise ValueError(f"{path.name}: its header describes tensor {name[:60]!r} with no dtype, shape and "
                             "offsets") from None
        if dtype in DTYPE_BYTES and end - start != math.prod(shape) * DTYPE_BYTES[dtype]:
            raise ValueError(f"{path.name}: its header lies: tensor {name[:60]!r} of shape {shape} {dtype} takes "
                             f"{end - start} bytes")
        spans.append((start, end))
    covered = 0
    for start, end in sorted(spans):
        if start != covered:
            raise ValueError(f"{path.name}: its header lies: its tensors' bytes overlap or leave a gap at byte {covered}")
        covered = end
    if 8 + n + covered != size:
        raise ValueError(f"{path.name}: its header does not match the file: it describes {covered} bytes of tensors, "
                         f"the file holds {size - 8 - n}")
    return tensors


def _weight_problems(folder: Path) -> tuple[list[str], list[dict[str, Any]] | None]:
    """The problems of a folder's safetensors files, and the tensors they hold (None where any is unreadable)."""
    from huggingface_hub import constants

    problems, tensors = [], []
    for file in sorted(folder.glob("*.safetensors")):
        if file.is_symlink():
            target = file.resolve()
            hub = Path(constants.HF_HUB_CACHE).resolve()
            if not (target.is_file() and hub in target.parents):  # the Hub cache keeps its blobs behind links
                problems.append(f"{file.name} is a symlink to {target}: the weights must be a file in the folder")
                continue
        if not file.is_file():
            problems.append(f"{file.name} is not a file")
            continue
        try:
            tensors.extend(safetensors_header(file).values())
        except (OSError, ValueError) as exc:
            problems.append(str(exc))
    return problems, (None if problems else tensors)


def _json(folder: Path, name: str, problems: list[str]) -> dict[str, Any] | None:
    path = folder / name
    if not path.exists():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:  # [[[[...]]]] deeper than the parser's stack
        problems.append(f"{name} does not parse (nested too deeply to read)")
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(f"{name} does not parse ({type(exc).__name__})")
        return None
    if not isinstance(found, dict):
        problems.append(f"{name} is not a JSON object")
        return None
    return found


def _tokenizer_problems(folder: Path, config: dict[str, Any] | None) -> list[str]:
    problems: list[str] = []
    if (folder / "tokenizer.json").exists():
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_file(str(folder / "tokenizer.json"))
        except BaseException as exc:  # the Rust parser's panics are BaseExceptions too
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            problems.append(f"tokenizer.json does not parse ({str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__})")
    tokenizer_config = _json(folder, "tokenizer_config.json", problems)
    if tokenizer_config is not None and "auto_map" in tokenizer_config:
        problems.append("tokenizer_config.json names code to run (auto_map), which the workbook never runs: save the "
                        "tokenizer with a class of transformers")
    if config is not None and isinstance(config.get("auto_map"), dict) and "AutoTokenizer" in config["auto_map"]:
        problems.append("config.json names tokenizer code to run (auto_map AutoTokenizer), which the workbook never "
                        "runs")
    return problems


def _size_problems(config: dict[str, Any], tensors: list[dict[str, Any]]) -> list[str]:
    dims = {d for t in tensors for d in t["shape"]}
    largest = max(dims, default=0)
    problems = []
    sized = lambda key: isinstance(config.get(key), int) and not isinstance(config.get(key), bool)  # noqa: E731
    unheld = [f"{key} {config[key]}" for key in filter(sized, EMBEDDING_SIZES) if config[key] not in dims]
    if unheld:  # one line: the weights are not this configuration's model (a dummy file, absurd sizes)
        return [f"config.json: {', '.join(unheld)} is the size of no tensor the weights hold ({len(tensors)} tensors, "
                f"the largest dimension {largest}): they are not this configuration's model"]
    for key in filter(sized, OTHER_SIZES):
        if config[key] > largest:
            problems.append(f"config.json: {key} {config[key]} exceeds every dimension of the weights (the largest "
                            f"{largest})")
    for key in filter(sized, LAYER_COUNTS):
        if config[key] > len(tensors):
            problems.append(f"config.json: {key} {config[key]} is more than the {len(tensors)} tensors the weights "
                            "hold")
    for key in filter(sized, POSITIONS):
        if config[key] > MAX_POSITIONS:
            problems.append(f"config.json: {key} {config[key]} is beyond {MAX_POSITIONS} positions")
    return problems


def folder_problems(folder: str | os.PathLike, adapter: bool = False) -> list[str]:
    """Every problem of a local model folder, one line each (empty: it may be loaded): its safetensors headers
    (:func:`safetensors_header`; a symlinked weight file is refused unless the Hub cache keeps it), its tokenizer's
    files (they parse, no ``auto_map``: code a tokenizer would run), and its configuration's sizes against the
    tensors the weights hold (a config of 10^9 positions or a vocabulary no tensor has is refused before a model of
    that size is built). ``adapter``: a peft adapter folder (its own weights and an optional tokenizer; its base is
    checked on its own)."""
    folder = Path(folder)
    problems, tensors = _weight_problems(folder)
    config = None if adapter else _json(folder, "config.json", problems)
    has_tokenizer = any((folder / name).exists() for name in TOKENIZER_FILES)
    if not adapter and not has_tokenizer:
        problems.append(f"holds no tokenizer ({', '.join(TOKENIZER_FILES[:2])}): save it beside the weights "
                        "(tokenizer.save_pretrained(folder))")
    problems += _tokenizer_problems(folder, config)
    if config is not None and tensors is not None:
        problems += _size_problems(config, tensors)
    return problems
