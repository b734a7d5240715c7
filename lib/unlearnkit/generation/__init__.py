"""Decoding: greedy answers, per-token confidences, and batched multinomial sampling of many answers
per question for the probabilistic evaluation of docs/metrics.md §3 (plus adaptive temperature scaling).

One module per job: :mod:`.greedy` greedy answers and their confidences; :mod:`.sampling` the batched sampler
(its design in that module's docstring); :mod:`.adaptive` adaptive temperature scaling; :mod:`.loop` the workbook's
own decoding loop; :mod:`.processors` the logits processors ``generate`` runs with; :mod:`.shared` what every
decoder shares; :mod:`.vllm_backend` the optional vLLM backend (vllm imported only when it is used).
"""

from .adaptive import AdaptiveSamples, adaptive_sample_answers
from .greedy import (
    certainty,
    encode_prompts,
    greedy_answers,
    greedy_continuations,
    greedy_with_confidences,
    token_confidences,
)
from .loop import COMPACT_BELOW, can_decode, decode, plain_config
from .sampling import (
    CPU_CHUNK,
    DECODERS,
    SampledAnswers,
    chunk_for,
    gpu_chunk_size,
    sample_answers,
    sample_continuations,
)
from .shared import left_pad
from .vllm_backend import (
    VLLM_MISSING,
    VllmModel,
    load_vllm,
    vllm_engine,
    vllm_greedy_with_confidences,
    vllm_sample_answers,
)

__all__ = [
    "AdaptiveSamples", "adaptive_sample_answers", "certainty", "encode_prompts", "greedy_answers",
    "greedy_continuations", "greedy_with_confidences", "token_confidences", "COMPACT_BELOW", "can_decode",
    "decode", "plain_config", "CPU_CHUNK", "DECODERS", "SampledAnswers", "chunk_for", "gpu_chunk_size",
    "sample_answers", "sample_continuations", "left_pad", "VLLM_MISSING", "VllmModel", "load_vllm",
    "vllm_engine", "vllm_greedy_with_confidences", "vllm_sample_answers",
]
