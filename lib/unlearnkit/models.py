"""Models: load by Hub name or local folder, or build a tiny Llama from scratch; prompt templates; LoRA; where a
model runs (device, CPU threads) and the eval-mode switch every scorer uses.

Every model, whatever its origin, is saved with ``save_pretrained`` next to an ``unlearnkit.json``
naming its prompt template (and the hash of what made it), so each later step treats it like any
Hugging Face model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch

from . import paths

# --------------------------------------------------------------------------- prompt templates


@dataclass(frozen=True)
class PromptTemplate:
    """How a question is put to a model (docs/metrics.md §1). The same template must serve the target,
    retain and unlearned models of one comparison."""

    name: str
    question_format: str  # contains "{question}"

    def prompt(self, question: str) -> str:
        return self.question_format.format(question=question)


TEMPLATES: dict[str, PromptTemplate] = {
    "phi": PromptTemplate("phi", "Question: {question}\nAnswer: "),
    "llama2-chat": PromptTemplate("llama2-chat", "[INST] {question} [/INST]"),
    # Vicuna v1.1+ (FastChat's conversation format, which the model was fine-tuned on; its tokenizer ships no chat
    # template): an interface string, reproduced as the model expects it.
    "vicuna": PromptTemplate("vicuna", "A chat between a curious user and an artificial intelligence assistant. "
                                       "The assistant gives helpful, detailed, and polite answers to the user's "
                                       "questions. USER: {question} ASSISTANT:"),
}
#: Family substrings of Hub names and the template used for them (TOFU's for Llama-2 and Phi).
_FAMILY_TEMPLATES = (("llama-2", "llama2-chat"), ("llama2", "llama2-chat"), ("vicuna", "vicuna"),
                     ("mistral", "llama2-chat"), ("phi", "phi"))


def template_for(name_or_path: str) -> PromptTemplate:
    """The template of a model entry: the one recorded beside a saved model, else by family name. A recorded chat
    template needs the tokenizer: :func:`load_model` resolves it."""
    meta = Path(name_or_path) / "unlearnkit.json"
    recorded = json.loads(meta.read_text())["template"] if meta.exists() else stated_template(name_or_path)
    if recorded:
        if recorded == CHAT:
            raise ValueError(f"{name_or_path} was saved with its tokenizer's chat template: load it with load_model")
        return get_template(recorded)
    lowered = str(name_or_path).lower()
    for key, template in _FAMILY_TEMPLATES:
        if key in lowered:
            return TEMPLATES[template]
    return TEMPLATES["phi"]


#: ``{folder or Hub name: template}`` stated for models without the workbook's marker (``runner eval --template``),
#: as JSON in the environment so that every worker process loading the model takes the same template.
STATED_TEMPLATES_VARIABLE = "UNLEARNKIT_STATED_TEMPLATES"


#: ``{Hub name: revision}`` stated for Hub models (``runner eval --revision``), read like the stated templates.
STATED_REVISIONS_VARIABLE = "UNLEARNKIT_STATED_REVISIONS"


def source_of(name_or_path: str | os.PathLike) -> str:
    """What transformers loads a model entry from: the resolved folder where there is one, else the Hub name."""
    local = paths.resolve(name_or_path)
    return str(local) if local.is_dir() else str(name_or_path)


def _stated(variable: str, name_or_path: str | os.PathLike) -> str | None:
    stated = os.environ.get(variable)
    return json.loads(stated).get(source_of(name_or_path)) if stated else None


def state(variable: str, name_or_path: str | os.PathLike, value: str) -> None:
    """Record ``value`` for a model in ``variable`` (:data:`STATED_TEMPLATES_VARIABLE`,
    :data:`STATED_REVISIONS_VARIABLE`): every later load, here and in the worker processes started after, takes it."""
    stated = json.loads(os.environ.get(variable) or "{}")
    os.environ[variable] = json.dumps({**stated, source_of(name_or_path): value})


def stated_revision(name: str | os.PathLike) -> str | None:
    """The revision (a branch, tag or commit) stated for a Hub model (:data:`STATED_REVISIONS_VARIABLE`), or None."""
    return _stated(STATED_REVISIONS_VARIABLE, name)


def stated_template(name_or_path: str | os.PathLike) -> str | None:
    """The template stated for a model without a marker (:data:`STATED_TEMPLATES_VARIABLE`), or None."""
    return _stated(STATED_TEMPLATES_VARIABLE, name_or_path)


def stated(name_or_path: str | os.PathLike) -> dict[str, str]:
    """What was stated for a model beside its files (``template``, ``revision``): part of what it is."""
    found = {"template": stated_template(name_or_path), "revision": stated_revision(name_or_path)}
    return {k: v for k, v in found.items() if v}


def get_template(name: str) -> PromptTemplate:
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown prompt template {name!r}; known: {', '.join(TEMPLATES)}") from None


#: The template name that means "the tokenizer's own chat template" (Vicuna, Mistral-Instruct, ...).
CHAT = "chat"
#: A character no prompt contains, standing in for the question while the chat template is rendered.
_QUESTION_MARK = "\ue000question\ue000"


def chat_template(tokenizer, name: str = CHAT) -> PromptTemplate:
    """The tokenizer's own chat template for one user turn, as a :class:`PromptTemplate`.

    The template is rendered once with a placeholder question and the generation prompt, so every other part of
    the library (encoding, scoring, sampling) keeps working on plain text. A leading BOS text is dropped because
    :func:`encode_prompt` adds the BOS token itself; rendering it as text too would start the prompt with two.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("this tokenizer has no chat template; use a plain template such as 'phi'")
    text = tokenizer.apply_chat_template([{"role": "user", "content": _QUESTION_MARK}], tokenize=False,
                                         add_generation_prompt=True)
    bos = tokenizer.bos_token
    if bos and text.startswith(bos):
        text = text[len(bos):]
    if text.count(_QUESTION_MARK) != 1:
        raise ValueError("the chat template does not show the user's message exactly once")
    question_format = text.replace("{", "{{").replace("}", "}}").replace(_QUESTION_MARK, "{question}")
    return PromptTemplate(name, question_format)


def conversation_template(tokenizer, name_or_path: str) -> PromptTemplate:
    """How a request is put to a chat or base model: the tokenizer's own chat template where it has one
    (Vicuna, Mistral-Instruct), else the template of the model's family (Phi-1.5: the plain Q&A template)."""
    if getattr(tokenizer, "chat_template", None):
        return chat_template(tokenizer)
    return template_for(name_or_path)


# --------------------------------------------------------------------------- tokenizer and tiny model

SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}


def train_bpe_tokenizer(texts: Iterable[str], vocab_size: int = 2048, min_frequency: int = 2,
                        special_tokens: dict[str, str] | None = None):
    """A byte-level BPE tokenizer trained on ``texts`` with the ``tokenizers`` library, wrapped as a
    ``PreTrainedTokenizerFast`` so it saves and loads like any Hugging Face tokenizer. ``special_tokens`` replaces
    the workbook's own (``<s>``, ``</s>``, ``<pad>``, ``<unk>``), e.g. Phi's single ``<|endoftext|>`` and no pad."""
    special_tokens = special_tokens or SPECIAL_TOKENS
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=special_tokens.get("unk_token")))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(dict.fromkeys(special_tokens.values())),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **special_tokens)


@dataclass
class TinyLlamaConfig:
    """A Llama-architecture model small enough to train from scratch on two CPU cores."""

    hidden_size: int = 192
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 256
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = True


def build_tiny_llama(tokenizer, config: TinyLlamaConfig | dict[str, Any] | None = None, seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = config if isinstance(config, TinyLlamaConfig) else TinyLlamaConfig(**(config or {}))
    llama_cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        attention_dropout=0.0,
        **asdict(cfg),
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(llama_cfg)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


#: Architectures a stand-in of a paper model can have (``paper-dry``): the config class of each.
STAND_IN_CONFIGS = {"phi": "PhiConfig", "llama": "LlamaConfig", "mistral": "MistralConfig"}


def build_stand_in(architecture: str, tokenizer, sizes: dict[str, int], seed: int = 0,
                   max_positions: int = 2048):
    """A randomly initialised causal LM of ``architecture`` (phi, llama, mistral) with ``sizes`` (hidden_size,
    num_hidden_layers, num_attention_heads, intermediate_size) and ``tokenizer``'s vocabulary: the interface of a
    paper model at a size two CPU cores can train. Phi keeps its own traits: half the head dimensions rotary, an
    untied output head with a bias."""
    import transformers

    if architecture not in STAND_IN_CONFIGS:
        raise ValueError(f"unknown stand-in architecture {architecture!r}; known: {', '.join(STAND_IN_CONFIGS)}")
    extra = {"partial_rotary_factor": 0.5} if architecture == "phi" else {}
    cfg = getattr(transformers, STAND_IN_CONFIGS[architecture])(
        vocab_size=len(tokenizer), max_position_embeddings=max_positions, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False,
        num_key_value_heads=sizes["num_attention_heads"],  # Mistral's config would keep its 8 key-value heads
        **sizes, **extra)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.generation_config.pad_token_id = pad_token_id(tokenizer)
    return model


# --------------------------------------------------------------------------- loading and saving


class LoadedModel(NamedTuple):
    """A model with what it takes to prompt it: ``loaded.model``, ``loaded.tokenizer``, ``loaded.template``."""

    model: Any
    tokenizer: Any
    template: PromptTemplate


def _dtype(name: str | None):
    if name in (None, "auto"):
        return "auto" if name == "auto" else torch.float32
    try:
        return getattr(torch, name)
    except AttributeError:
        raise ValueError(f"unknown dtype {name!r}; use float32, bfloat16 or float16") from None


def load_model(name_or_path: str | os.PathLike, dtype: str | None = None, device: str | None = None,
               template: str | None = None) -> LoadedModel:
    """Load (model, tokenizer, template) from a local folder or a Hub name, without a progress bar.

    A relative path is taken from the project root. ``device`` None keeps the model on the CPU; ``"auto"``
    puts it on the GPU when there is one. With ``HF_HUB_OFFLINE=1`` a Hub name that is not in the local
    cache fails fast with the library's own message. ``template`` names a prompt template; ``"chat"`` takes the
    tokenizer's own chat template where it has one (see :func:`conversation_template`).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = str(name_or_path)
    local = paths.resolve(spec)
    source = source_of(spec)
    if _missing_folder(spec, local):
        raise FileNotFoundError(f"model folder {local} does not exist (and {spec!r} is not a Hub name)")
    adapter = local.is_dir() and (local / ADAPTER_CONFIG).exists()  # transformers applies it to its base (peft)
    has_tokenizer = not adapter or any((local / f).exists() for f in ("tokenizer.json", "tokenizer_config.json"))
    revision = {"revision": stated_revision(spec)} if stated_revision(spec) else {}
    tokenizer = AutoTokenizer.from_pretrained(source if has_tokenizer else source_of(adapter_base(local)), **revision)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if local.is_dir() and not any(local.glob("*.safetensors")) and any(local.glob("*.bin")):
        raise ValueError(f"model folder {paths.shown(local)} holds pickled weights (*.bin) only, which the workbook never "
                         "unpickles: save it with safetensors (model.save_pretrained(folder), the default)")
    with _quiet_transformers():
        model = AutoModelForCausalLM.from_pretrained(source, dtype=_dtype(dtype), use_safetensors=True, **revision)
    if device == "auto":
        to_available_device(model)
    elif device:
        model.to(device)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    meta = Path(source) / "unlearnkit.json"
    name = template or (json.loads(meta.read_text())["template"] if meta.exists() else None) or stated_template(source)
    if name == CHAT:
        tmpl = conversation_template(tokenizer, source)
    else:
        tmpl = get_template(name) if name else template_for(source)  # a Hub model: its family's template
    return LoadedModel(model, tokenizer, tmpl)


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No "Loading weights" or "Writing model shards" bar per model: a notebook that loads or saves eleven
    models would drown in them."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


# --------------------------------------------------------------------------- where a model runs


def to_available_device(model):
    """The model on the GPU when there is one (and it is still on the CPU); returned for chaining."""
    if torch.cuda.is_available() and next(model.parameters()).device.type == "cpu":
        model.to("cuda")
    return model


def device_of(model) -> torch.device:
    return next(model.parameters()).device


@contextmanager
def eval_mode(model) -> Iterator[Any]:
    """The model in eval mode for the block (no dropout), restored to its former mode afterwards, also when
    the block raises."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def in_eval_mode(function):
    """Decorator: the function's first argument, a model, is in :func:`eval_mode` for the call."""
    import functools

    @functools.wraps(function)
    def wrapper(model, *args, **kwargs):
        with eval_mode(model):
            return function(model, *args, **kwargs)

    return wrapper


#: Models below this size run on one intra-op thread on a CPU (see :func:`cpu_threads`).
ONE_THREAD_BELOW_PARAMETERS = 100_000_000


def threads_for(model=None, n_parameters: int | None = None) -> int | None:
    """The CPU thread policy: one torch thread for a small model on a CPU, else None (leave torch's choice).

    A tiny model's matrices are too small for a second thread to pay, and when the cores are shared with
    another job the threads spin-wait for each other: on the default profile one format evaluation took
    ~185 s with two threads and ~40 s with one while another notebook ran."""
    if model is not None:
        if device_of(model).type != "cpu":
            return None
        n_parameters = sum(p.numel() for p in model.parameters())
    return 1 if n_parameters is not None and n_parameters < ONE_THREAD_BELOW_PARAMETERS else None


@contextmanager
def cpu_threads(model=None, n_parameters: int | None = None, threads: int | None = None) -> Iterator[None]:
    """Torch's intra-op threads set by :func:`threads_for` (or to ``threads``) for the block, then restored."""
    wanted = threads if threads is not None else threads_for(model, n_parameters)
    before = torch.get_num_threads()
    if wanted:
        torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def check_source(spec: str, what: str = "model") -> None:
    """Refuse, in one line and before any kernel starts, a model the run could not load: a folder that does not exist
    or holds no ``config.json``, or a Hub name while offline (``HF_HUB_OFFLINE=1``, the runner's default) that is not
    in the local Hub cache. ``tiny`` (trained from scratch) always passes."""
    if spec == "tiny":
        return
    local = paths.resolve(spec)
    if local.is_dir():
        if (local / ADAPTER_CONFIG).exists():  # a peft adapter: its base must load too
            check_source(adapter_base(local), f"the base of {what} {spec!r}")
            return
        if not (local / "config.json").exists():
            raise ValueError(f"{what} {spec!r}: the folder {paths.shown(local)} holds no config.json (not a saved model)")
        if not any(local.glob("*.safetensors")):
            raise ValueError(f"{what} {spec!r}: {paths.shown(local)} holds no *.safetensors weights (the workbook never "
                             "unpickles *.bin; save with model.save_pretrained(folder), the default)")
        return
    if _missing_folder(spec, local):
        raise ValueError(f"{what} {spec!r}: the model folder {paths.shown(local)} does not exist (and it is not a Hub "
                         "name)")
    if paths.offline("HF_HUB_OFFLINE"):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(spec, "config.json", revision=stated_revision(spec)), str):
            raise ValueError(f"{what} {spec!r} is a Hub name that is not in the local Hub cache, and the runner is "
                             "offline: pass --online (make ... ONLINE=1) to download it once, or name a local folder")


#: What marks a folder as a peft adapter (LoRA and the like): transformers loads its base and applies it.
ADAPTER_CONFIG = "adapter_config.json"


def adapter_base(folder: str | os.PathLike) -> str:
    """The base model an adapter folder names (``base_model_name_or_path``): a folder or a Hub name."""
    base = json.loads((Path(folder) / ADAPTER_CONFIG).read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"the adapter {paths.shown(folder)} names no base_model_name_or_path")
    return str(base)


def _missing_folder(spec: str, local: Path) -> bool:
    """``spec`` names a local folder (a path, or not a Hub name) that does not exist."""
    return not local.is_dir() and (spec.startswith((".", "/", "~")) or not _is_hub_name(spec))


def _is_hub_name(spec: str) -> bool:
    parts = spec.split("/")
    return 1 <= len(parts) <= 2 and all(parts)


def save_model(model, tokenizer, folder: str | os.PathLike, template: PromptTemplate,
               extra: dict[str, Any] | None = None, files: dict[str, str] | None = None) -> Path:
    """Save atomically: a half-written model folder never replaces a good one. ``files`` are more text files
    (``history.json``) saved inside the same atomic step, so a model is never found without them."""
    recipe = json.dumps({"template": template.name, **(extra or {})}, indent=2)
    return _save_atomically(model, tokenizer, folder, {**(files or {}), "unlearnkit.json": recipe})


def save_plain_model(model, tokenizer, folder: str | os.PathLike) -> Path:
    """Save like a model published on the Hub: weights and tokenizer only, no ``unlearnkit.json``, so loading it
    takes the path of a Hub model (template from its family name or the profile). Atomic like :func:`save_model`."""
    return _save_atomically(model, tokenizer, folder, {})


def _save_atomically(model, tokenizer, folder: str | os.PathLike, files: dict[str, str]) -> Path:
    import shutil

    folder = Path(folder)
    if folder.is_symlink() or (folder.exists() and any(folder.iterdir()) and not (folder / "config.json").exists()):
        raise ValueError(f"{paths.shown(folder)} is a symlink or a folder that holds no saved model: it is never "
                         "removed to save a model there")
    # Hidden and per process: never taken for a saved model (step-* globs), never shared by two writers.
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    with _quiet_transformers():
        model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    for name, text in files.items():
        (tmp / name).write_text(text)
    write_digest(tmp)
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(tmp, folder)  # a rename keeps each file's size and modification time: the digest still holds
    return folder


def is_saved_model(folder: str | os.PathLike) -> bool:
    """A model folder the workbook saved, whole: its recipe, its config and weights that match their digest
    (:func:`weights_intact`), so a truncated or altered weight file is retrained, never trusted."""
    folder = Path(folder)
    return (folder / "unlearnkit.json").exists() and (folder / "config.json").exists() and weights_intact(folder)


def is_loadable(location: str | os.PathLike) -> bool:
    """A model that can be loaded and scored: a folder the workbook saved (:func:`is_saved_model`), a folder saved
    elsewhere with its config and intact safetensors weights, or a Hub name (loaded from the Hub's cache)."""
    folder = paths.resolve(location)
    if not folder.is_dir():
        return not _missing_folder(str(location), folder)
    return is_saved_model(folder) or (((folder / "config.json").exists() or (folder / ADAPTER_CONFIG).exists())
                                      and weights_intact(folder))


# --------------------------------------------------------------------------- the weights' digest

#: Beside a model's weights: each weight file's size, modification time and sha256, written when it is saved.
DIGEST = "digest.json"


def _weight_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.safetensors"))


def _sha256(path: Path) -> str:
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _record(path: Path, sha256: str | None = None) -> dict[str, Any]:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256 or _sha256(path)}


def write_digest(folder: str | os.PathLike) -> dict[str, Any]:
    """Record the digest of ``folder``'s weight files (``digest.json``) and return it."""
    folder = Path(folder)
    digest = {p.name: _record(p) for p in _weight_files(folder)}
    paths.atomic_write_text(folder / DIGEST, json.dumps(digest, indent=1, sort_keys=True))
    return digest


def content_digest(folder: str | os.PathLike) -> str | None:
    """What a model folder's weights are, as one sha256 over its weight files' digests (:func:`weights_intact`
    checks them, hashing in full only what changed since the digest was written); None for a folder without intact
    safetensors weights. A read-only folder is hashed each time instead of keeping its digest."""
    import hashlib

    folder = Path(folder)
    try:
        if not weights_intact(folder):
            return None
        digest = json.loads((folder / DIGEST).read_text())
        parts = {name: record["sha256"] for name, record in sorted(digest.items())}
    except OSError:  # cannot keep a digest there: hash the files now
        files = _weight_files(folder)
        if not files or not all(safetensors_complete(p) for p in files):
            return None
        parts = {p.name: _sha256(p) for p in files}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def safetensors_complete(path: str | os.PathLike) -> bool:
    """Whether a safetensors file is as long as its own header says (8 bytes of header length, the JSON header,
    then the tensors' data up to the largest end offset): a truncated file is not."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            if not 2 <= n <= 100_000_000:
                return False
            header = json.loads(f.read(n))
        end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
        return path.stat().st_size == 8 + n + end
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False


def weights_intact(folder: str | os.PathLike) -> bool:
    """Whether ``folder``'s weight files are the ones saved: each file's size and modification time are compared with
    its digest (cheap), and it is hashed in full only when they differ (a copy: the record is then refreshed). A
    folder saved before digests existed gets one computed after a structural check of each file (never a retrain of
    a whole model); a file missing, added, truncated or altered makes it not intact."""
    folder = Path(folder)
    files = _weight_files(folder)
    if not files:
        return False
    try:
        digest = json.loads((folder / DIGEST).read_text())
    except FileNotFoundError:
        if not all(safetensors_complete(p) for p in files):
            return False
        write_digest(folder)
        return True
    except (OSError, ValueError):
        return False
    if not isinstance(digest, dict) or sorted(digest) != [p.name for p in files]:
        return False
    refreshed, changed = dict(digest), False
    for p in files:
        record, st = digest[p.name], p.stat()
        if not isinstance(record, dict):
            return False
        if record.get("size") == st.st_size and record.get("mtime_ns") == st.st_mtime_ns:
            continue
        if record.get("size") != st.st_size or record.get("sha256") != _sha256(p):
            return False
        refreshed[p.name], changed = _record(p, record["sha256"]), True
    if changed:
        paths.atomic_write_text(folder / DIGEST, json.dumps(refreshed, indent=1, sort_keys=True))
    return True


# --------------------------------------------------------------------------- LoRA


def apply_lora(model, r: int = 8, alpha: int = 16, dropout: float = 0.0,
               target_modules: str | Sequence[str] | None = ("q_proj", "k_proj", "v_proj", "o_proj")):
    """Wrap ``model`` with LoRA adapters through peft; the base weights stay frozen.

    ``target_modules`` names the adapted modules, or ``"all-linear"`` for every linear layer but the output head
    (what TOFU's LoRA runs adapt), or None for peft's default of the architecture."""
    from peft import LoraConfig, get_peft_model

    if r <= 0:
        raise ValueError(f"LoRA rank must be positive, got {r}")
    targets = target_modules if isinstance(target_modules, str) or target_modules is None else list(target_modules)
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets or None,
                     task_type="CAUSAL_LM")
    return get_peft_model(model, cfg)


def merged_copy(model):
    """A plain model with the LoRA adapters of ``model`` merged in, ``model`` itself untouched (peft's
    ``merge_and_unload`` removes the adapters in place, which would end a run that keeps weights along the way);
    a plain model is returned as is."""
    import copy

    from peft import PeftModel

    inner = getattr(model, "module", model)
    if not isinstance(inner, PeftModel):
        return inner
    return copy.deepcopy(inner).merge_and_unload()


# --------------------------------------------------------------------------- encoding Q&A


def encode_prompt(tokenizer, template: PromptTemplate, question: str) -> list[int]:
    ids = tokenizer(template.prompt(question), add_special_tokens=False)["input_ids"]
    bos = tokenizer.bos_token_id
    return ([bos] if bos is not None and _adds_bos(tokenizer) else []) + ids


def _adds_bos(tokenizer) -> bool:
    # A model family that starts every sequence with BOS expects it here too; ours always do.
    return getattr(tokenizer, "add_bos_token", True) is not False


#: How the answer tokens of a Q&A pair are cut (the profile's ``answer_tokens``, docs/metrics.md §9).
ANSWER_TOKENS = ("separate", "ou_joint")


def encode_qa(tokenizer, template: PromptTemplate, question: str, answer: str,
              max_length: int | None = None, tokens: str = "separate") -> dict[str, list[int]]:
    """A Q&A pair as input ids and labels (-100 on the prompt).

    ``tokens="separate"`` (the workbook's): prompt and answer tokenised apart and joined, so the scored tokens are
    the answer's own tokens plus EOS, the same in training, scoring and generation. ``"ou_joint"``: as
    open-unlearning (and TOFU's code) cut them: prompt + answer tokenised as one string (EOS appended), the labels
    starting after as many tokens as the prompt alone has. Where the template ends in a space (Phi's "Answer: "),
    the joint string merges that space into the answer's first word, so the labels start one token late and the
    answer's first word is not scored."""
    if tokens not in ANSWER_TOKENS:
        raise ValueError(f"unknown answer tokens {tokens!r}; use one of {', '.join(ANSWER_TOKENS)}")
    prompt_ids = encode_prompt(tokenizer, template, question)
    if tokens == "ou_joint":
        start = prompt_ids[:len(prompt_ids) - len(tokenizer(template.prompt(question), add_special_tokens=False)
                                                  ["input_ids"])]  # the BOS the prompt starts with, if any
        input_ids = start + tokenizer(template.prompt(question) + answer, add_special_tokens=False)["input_ids"]
        if input_ids[-1] != tokenizer.eos_token_id:
            input_ids = input_ids + [tokenizer.eos_token_id]
        labels = [-100] * len(prompt_ids) + input_ids[len(prompt_ids):]
    else:
        answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        input_ids = prompt_ids + answer_ids
        labels = [-100] * len(prompt_ids) + answer_ids
    if max_length is not None and len(input_ids) > max_length:
        input_ids, labels = input_ids[:max_length], labels[:max_length]
    return {"input_ids": input_ids, "labels": labels}


def pad_token_id(tokenizer) -> int:
    """The id batches are padded with: the tokenizer's pad token, else its EOS (padding is masked anyway)."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def collate(examples: Sequence[dict[str, list[int]]], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a list of encoded examples into a batch; padding is never scored."""
    width = max(len(e["input_ids"]) for e in examples)
    input_ids = torch.full((len(examples), width), pad_token_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e["input_ids"])
        input_ids[i, :n] = torch.tensor(e["input_ids"])
        labels[i, :n] = torch.tensor(e["labels"])
        attention[i, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}



def answer_positions(labels: torch.Tensor) -> torch.Tensor:
    """Positions whose *next* token is scored, [batch, len]: where the model predicts the answer and EOS (the labels
    of :func:`collate`: -100 on the prompt and the padding)."""
    mask = torch.zeros_like(labels, dtype=torch.bool)
    mask[:, :-1] = labels[:, 1:] != -100
    return mask


def mean_entropy(logits: torch.Tensor, position_mask: torch.Tensor) -> torch.Tensor:
    """ℓ = mean over the masked positions of the entropy of the next-token distribution, per example
    (shape [batch]); the quantity of the entropy-optimisation loss and of its measure (docs/metrics.md §3)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    entropy = -(logp.exp() * logp).sum(-1)
    mask = position_mask.to(entropy.dtype)
    return (entropy * mask).sum(-1) / mask.sum(-1).clamp(min=1)

#: Longest row of a packed batch (:func:`pack`): a row holds whole examples up to this many tokens (or the longest
#: example, if longer). Attention costs a row's length squared, so rows much longer than a Q&A pair buy nothing.
PACKED_ROW_TOKENS = 128


def pack(examples: Sequence[dict[str, list[int]]], pad_token_id: int,
         row_tokens: int = PACKED_ROW_TOKENS) -> dict[str, torch.Tensor]:
    """The examples of a batch packed whole into as few rows as fit ``row_tokens`` (first fit, longest first),
    instead of one padded row each (:func:`collate`): the same examples, the same scored tokens, far less padding.

    ``position_ids`` restart at 0 with every example, which is how transformers tells packed sequences apart: its
    attention mask then keeps each example to itself (block-diagonal and causal), so every token is computed as in
    its own padded row. No ``attention_mask``: the padding at the end of a row is one more sequence, never scored
    (its labels are -100, as is each example's first position, which nothing predicts). Use only with a model that
    :func:`packs_sequences`."""
    lengths = [len(e["input_ids"]) for e in examples]
    capacity = max(row_tokens, max(lengths))
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(examples)), key=lambda i: -lengths[i]):
        fit = next((r for r, free in enumerate(room) if lengths[i] <= free), None)
        if fit is None:
            rows.append([i])
            room.append(capacity - lengths[i])
        else:
            rows[fit].append(i)
            room[fit] -= lengths[i]
    width = max(capacity - free for free in room)
    input_ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    for r, members in enumerate(rows):
        at = 0
        for i in members:
            n = lengths[i]
            input_ids[r, at:at + n] = torch.tensor(examples[i]["input_ids"])
            labels[r, at + 1:at + n] = torch.tensor(examples[i]["labels"][1:])
            positions[r, at:at + n] = torch.arange(n)
            at += n
        positions[r, at:] = torch.arange(width - at)  # the row's padding: a sequence of its own
    return {"input_ids": input_ids, "labels": labels, "position_ids": positions}


_PACKS: dict[tuple, bool] = {}


@torch.no_grad()
def packs_sequences(model) -> bool:
    """Whether ``model`` computes a packed batch (:func:`pack`) as it computes the same examples padded: checked once
    per architecture and attention implementation on two short sequences, so an architecture whose attention mask
    ignores packed position ids is trained on padded batches instead of across its examples' boundaries."""
    inner = getattr(model, "module", model)
    config = getattr(inner, "config", None)
    key = (type(inner).__name__, getattr(config, "_attn_implementation", None), getattr(config, "model_type", None))
    if key not in _PACKS:
        vocab = int(getattr(config, "vocab_size", 0) or 0)
        if vocab < 8:
            _PACKS[key] = False
            return False
        generator = torch.Generator().manual_seed(0)
        examples = [{"input_ids": torch.randint(1, vocab, (n,), generator=generator).tolist(),
                     "labels": [-100] * n} for n in (5, 7)]
        device = device_of(inner)
        with eval_mode(inner):
            padded = collate(examples, 0)
            alone = inner(input_ids=padded["input_ids"].to(device), attention_mask=padded["attention_mask"].to(device),
                          use_cache=False).logits
            packed = pack(examples, 0, row_tokens=16)
            together = inner(input_ids=packed["input_ids"].to(device), position_ids=packed["position_ids"].to(device),
                             use_cache=False).logits
        # pack puts the longer example first: positions 0-6 are example 1, 7-11 example 0
        same = (torch.allclose(together[0, :7], alone[1, :7], atol=1e-4, rtol=1e-4)
                and torch.allclose(together[0, 7:12], alone[0, :5], atol=1e-4, rtol=1e-4))
        _PACKS[key] = bool(same)
    return _PACKS[key]
