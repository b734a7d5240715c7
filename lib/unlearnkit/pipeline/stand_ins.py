"""Stand-ins of the paper models for the ``paper-dry`` and ``paper-llama-dry`` profiles: small, randomly
initialised models of each paper model's architecture and interface, built once per recipe under
``data/stand-ins/``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, NamedTuple

from tqdm.auto import tqdm

from .. import config, models, paths, stations, training
from ..config import Params
from ..data.tofu import (
    TofuSource,
)
from .corpus import TOKENIZER_TEXTS, all_texts, corpus, corpus_params
from .store import TINY, tiny_model_config

#: Where the ``paper-dry`` profile's stand-ins are built: beside the generated corpora, never committed.
STAND_INS = "data/stand-ins"
#: Phi's tokenizer has one special token for beginning, end and unknown, and no padding token.
PHI_SPECIAL_TOKENS = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}
#: Llama-3.2-Instruct's tokenizer: <|begin_of_text|> begins, <|eot_id|> ends a turn and is its EOS, no padding or
#: unknown token, and the header marks of its chat format are special tokens too.
LLAMA3_SPECIAL_TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
LLAMA3_HEADER_TOKENS = ("<|start_header_id|>", "<|end_header_id|>")
#: The kinds of stand-in tokenizer: its special tokens (None: the workbook's own) and further special tokens.
TOKENIZER_KINDS: dict[str, tuple[dict[str, str] | None, tuple[str, ...]]] = {
    "phi": (PHI_SPECIAL_TOKENS, ()), "meta": (None, ()), "llama3": (LLAMA3_SPECIAL_TOKENS, LLAMA3_HEADER_TOKENS)}


def _bos_as_llama3(tokenizer) -> None:
    """Give ``tokenizer`` Llama 3's way with BOS: its tokenizer.json prepends <|begin_of_text|> in the post-processor
    (so a call with special tokens adds it, as open-unlearning's does), while the loaded tokenizer reports
    ``add_bos_token`` False (transformers 5), so the workbook's :func:`encode_prompt` adds none."""
    from tokenizers import processors

    bos = tokenizer.bos_token
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, tokenizer.bos_token_id)])
#: One user turn in Mistral-Instruct's format, so the chat-template path (alignment_template: chat) is exercised.
MISTRAL_CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
                         "[INST] {{ message['content'] }} [/INST]{% else %}{{ message['content'] }}{{ eos_token }}"
                         "{% endif %}{% endfor %}")


#: Bump when the stand-ins are built differently for the same recipe: they are then rebuilt.
STAND_IN_VERSION = 5  # 5: stand-in tokenizers trained on TOKENIZER_SPLITS


class StandIn(NamedTuple):
    """A small randomly initialised model of one paper model's architecture and interface (tokenizer kind, chat
    template). Its folder is named like the paper model, so everything that reads a model's family from its name
    (prompt templates) treats it as it treats the real one."""

    architecture: str  # phi | llama | llama3 | mistral
    tokenizer: str  # a kind of TOKENIZER_KINDS
    chat_template: str | None
    stands_for: str


STAND_IN_MODELS: dict[str, StandIn] = {
    "phi-1_5": StandIn("phi", "phi", None, "microsoft/phi-1_5, the model of TOFU and of the probabilistic paper"),
    "Llama2-7b-WhoIsHarryPotter": StandIn("llama", "meta", None, "microsoft/Llama2-7b-WhoIsHarryPotter (notebook 05)"),
    "vicuna-7b-v1.5": StandIn("llama", "meta", None, "lmsys/vicuna-7b-v1.5 (notebook 07, Vicuna's own template)"),
    "Mistral-7B-Instruct-v0.3": StandIn("mistral", "meta", MISTRAL_CHAT_TEMPLATE,
                                        "mistralai/Mistral-7B-Instruct-v0.3 (notebook 07, its chat template)"),
    "HarmBench-Llama-2-13b-cls": StandIn("llama", "meta", None, "cais/HarmBench-Llama-2-13b-cls (notebook 07's judge)"),
    "Llama-3.2-1B-Instruct": StandIn("llama3", "llama3", None, "meta-llama/Llama-3.2-1B-Instruct, open-unlearning's "
                                     "TOFU model (paper-llama; prompted in open-unlearning's template, llama3-ou)"),
}


def stand_ins_named(params: Params) -> list[str]:
    """The stand-ins a profile names in ``model``, ``hp_model``, ``alignment_models`` and ``safety_judge``."""
    named = [params.model, params.hp_model, params.safety_judge, *(params.alignment_models or [])]
    prefix = STAND_INS + "/"
    found = [str(n)[len(prefix):] for n in named if n and str(n).startswith(prefix)]
    unknown = sorted(set(found) - set(STAND_IN_MODELS))
    if unknown:
        raise ValueError(f"no stand-in named {', '.join(unknown)}; stand-ins: {', '.join(STAND_IN_MODELS)}")
    return list(dict.fromkeys(found))


def _stand_in_texts(source: TofuSource) -> list[str]:
    from ..data.behaviours import synthetic_behaviours
    from ..metrics.safety import HARMBENCH_PROMPT

    # the stand-ins are built once per recipe, whatever the seed: their vocabulary sees the first draw's requests
    requests = [text for row in synthetic_behaviours(seed=0) for text in (row["goal"], row["target"])]
    # The classifier reads " Yes" or " No" as one token each after its prompt's last line: frequent enough here to
    # be merged before the vocabulary is full.
    last_line = HARMBENCH_PROMPT.rsplit("\n", 1)[-1]
    verdicts = [f"{last_line} {answer}" for answer in ("Yes", "No") for _ in range(500)]
    return all_texts(source) + requests + [HARMBENCH_PROMPT] + verdicts


def build_stand_ins(params: Params) -> dict[str, Path]:
    """Build (once per recipe) the stand-ins the profile names, under ``data/stand-ins/<paper model's name>``.

    Each is randomly initialised with the profile's ``tiny_*`` sizes and a byte-level BPE tokenizer trained on the
    profile's corpus and requests (Phi's or Meta's special tokens, Mistral's chat template): the paper's code path
    (a model read from a folder, its family's template, a chat template, a judge reading P(Yes)) runs on them,
    what they answer means nothing. Only the main process writes (``accelerate launch``)."""
    names = stand_ins_named(params)
    if not names:
        return {}
    source = corpus(params)
    # A stand-in stands for downloaded pretrained weights, data to the workbook: drawn from data_seed, the same for
    # every training seed (and "seed" in the recipe, as before data_seed existed, so a built stand-in stays valid).
    recipe = {"corpus": corpus_params(params), "sizes": tiny_model_config(params), "vocab": params.tokenizer_vocab_size,
              "seed": params.corpus_draw, "version": STAND_IN_VERSION}
    folders = {name: paths.resolve(f"{STAND_INS}/{name}") for name in names}
    hashes = {name: config.params_hash({**recipe, "name": name}) for name in names}
    state = training.processes()
    if state.is_main_process:
        todo = [n for n in names if _stand_in_recipe(folders[n]) != hashes[n]]
        texts = _stand_in_texts(source) if todo else []
        trained: dict[str, Any] = {}  # one tokenizer per kind of special tokens, copied per stand-in
        for name in tqdm(todo, desc="stand-ins", disable=not stations.show_progress()):
            spec = STAND_IN_MODELS[name]
            if spec.tokenizer not in trained:
                special, extra = TOKENIZER_KINDS[spec.tokenizer]
                trained[spec.tokenizer] = models.train_bpe_tokenizer(
                    texts, vocab_size=params.tokenizer_vocab_size, special_tokens=special, extra_special_tokens=extra)
            tokenizer = copy.deepcopy(trained[spec.tokenizer])  # a chat template must not reach the others
            if spec.chat_template:
                tokenizer.chat_template = spec.chat_template
            if spec.tokenizer == "llama3":
                _bos_as_llama3(tokenizer)
            model = models.build_stand_in(spec.architecture, tokenizer, tiny_model_config(params), seed=params.corpus_draw)
            models.save_plain_model(model, tokenizer, folders[name])
            (folders[name] / "stand-in.json").write_text(json.dumps(
                {"stands_for": spec.stands_for, "params_hash": hashes[name]}))
    state.wait_for_everyone()
    return folders


def base_identity(params: Params) -> str:
    """What names the model fine-tuning starts from in a cache key: the profile's model entry, and for a stand-in
    also the recipe it was built with (a rebuilt stand-in is another model under the same name)."""
    if str(params.model).startswith(STAND_INS + "/"):
        build_stand_ins(params)  # a stand-in not yet built has no recipe to name
        return f"{params.model}@{_stand_in_recipe(paths.resolve(params.model))}"
    if params.model == TINY:  # a from-scratch base: named with the texts of its tokenizer
        return f"{TINY}@{TOKENIZER_TEXTS}"
    return params.model


def _stand_in_recipe(folder: Path) -> str | None:
    marker = folder / "stand-in.json"
    return json.loads(marker.read_text())["params_hash"] if marker.exists() else None
