"""Prompt templates: how a question is put to a model (a named template, the one recorded beside a saved model or
stated for it, the model family's, or the tokenizer's own chat template)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .sources import stated_template


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
    # Llama 3's chat format as open-unlearning (OU) writes it for its TOFU models (configs/model/Llama-3.2-1B-Instruct
    # .yaml: apply_chat_template false, a fixed system prompt, no knowledge-date lines, so the prompt never depends on
    # the day). OU's text begins with <|begin_of_text|> and its tokenizer call adds the tokenizer's BOS before it; a
    # Llama 3 tokenizer says add_bos_token False (transformers 5), so encode_prompt adds none, and the text holds both:
    # the same token ids as OU's, two BOS included (tests/test_paper_llama_dry.py).
    "llama3-ou": PromptTemplate("llama3-ou", "<|begin_of_text|><|begin_of_text|><|start_header_id|>system"
                                             "<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
                                             "<|start_header_id|>user<|end_header_id|>\n\n{question}<|eot_id|>"
                                             "<|start_header_id|>assistant<|end_header_id|>\n\n"),
}
#: Family substrings of Hub names and the template used for them (TOFU's for Llama-2 and Phi, open-unlearning's for
#: Llama 3: "llama-3." and "llama-3-" name Llama 3 models, and not LLaMA-1's 30B).
_FAMILY_TEMPLATES = (("llama-2", "llama2-chat"), ("llama2", "llama2-chat"), ("llama-3.", "llama3-ou"),
                     ("llama-3-", "llama3-ou"), ("vicuna", "vicuna"), ("mistral", "llama2-chat"), ("phi", "phi"))


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
