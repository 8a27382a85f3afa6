"""An offline pointwise LLM relevance scorer (monoT5-style) behind the `Reranker` protocol.

The bundled SmolLM2-135M-Instruct GGUF runs in-process through `llama_cpp.Llama`; no server and no
sampling. For each (question, passage) the model reads its own chat-templated instruction
"Does the passage answer the question? Answer yes or no.", and the score is the probability mass of
"yes" against "no" in the next-token logits: P(yes) = softmax over the yes/no token ids, summing
the spelling variants (" yes", "yes", "Yes", " Yes" vs the same for "no"). Reading logits makes the
score deterministic and calibrated to [0, 1] without generating text.

Wrap it in `rerank.CachedReranker` so each pair is scored once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citegate.models.llm_server import local_model_path
from citegate.models.protocols import Scorable

SYSTEM = "You are a careful relevance judge."
INSTRUCTION = "Does the passage answer the question? Answer yes or no."
YES_WORDS = (" yes", "yes", "Yes", " Yes")
NO_WORDS = (" no", "no", "No", " No")
_Q, _P = "\x00QUESTION\x00", "\x00PASSAGE\x00"  # sentinels split the rendered template
_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class LLMRelevanceScorer:
    """P(yes) of SmolLM2-135M-Instruct (Q4_1 GGUF, llama.cpp in-process) for "does the passage
    answer the question?"; higher is more relevant, scores lie in [0, 1].

    Tokens before the passage (system prompt, instruction, question) are evaluated once per
    question and kept in the KV cache; each passage is then evaluated as one batch on top of that
    prefix, so a score never depends on the order or company of the candidates (bit-identical
    across calls). Passages are cut to `max_passage_chars`, then to what fits in `n_ctx`.

    Throughput, measured on a 2-core VM while other jobs ran (load average ~6), for
    a ~255-token pair (question ~15 tokens, passage ~190 tokens, template ~50): n_threads=1:
    0.56 pairs/s for passages of one question (prefix reused), 0.40 pairs/s with a new question
    each time; n_threads=2: 0.22 and 0.12 pairs/s (llama.cpp's spinning worker threads lose badly
    on oversubscribed cores). Pass n_threads=1 while the machine is shared (2 should win on
    idle cores; not measured).
    """

    def __init__(
        self,
        model_path: Path | str | None = None,
        n_ctx: int = 1024,
        n_threads: int = 2,
        max_passage_chars: int = 1200,
    ) -> None:
        from llama_cpp import Llama

        path = Path(model_path) if model_path else local_model_path()
        self.id = (
            "llm/smollm2-135m-yes-prob"
            if path == local_model_path()
            else f"llm/{path.stem.lower()}-yes-prob"
        )
        self.max_passage_chars = max_passage_chars
        self.llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            seed=0,
            logits_all=False,
            verbose=False,
        )
        self._head, self._mid, self._tail = _template_pieces(self.llm)
        self._yes = _single_token_ids(self.llm, YES_WORDS)
        self._no = _single_token_ids(self.llm, NO_WORDS)
        self._prefix: list[int] | None = None  # the tokens now held in the KV cache as prefix

    def score(self, question: str, cands: Sequence[Scorable]) -> list[float]:
        """P(yes) for each candidate, in order."""
        prefix = self._prefix_tokens(question)
        return [self._p_yes(prefix, self._suffix_tokens(prefix, c.text)) for c in cands]

    def _tok(self, text: str, special: bool) -> list[int]:
        """Tokens of a piece: template pieces parse special tokens, user text never does."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def _prefix_tokens(self, question: str) -> list[int]:
        """Template head + question (capped at a quarter of the context) + text before passage."""
        q = self._tok(question, special=False)[: self.llm.n_ctx() // 4]
        return self._head + q + self._mid

    def _suffix_tokens(self, prefix: list[int], passage: str) -> list[int]:
        """Passage (cut to the char limit, then to the context left) + generation prompt."""
        room = self.llm.n_ctx() - len(prefix) - len(self._tail)
        p = self._tok(passage[: self.max_passage_chars], special=False)[: max(room, 0)]
        return p + self._tail

    def _p_yes(self, prefix: list[int], suffix: list[int]) -> float:
        """Evaluate prefix (reused when unchanged) then suffix; P(yes) from the last logits."""
        llm = self.llm
        if self._prefix != prefix:
            llm.reset()
            llm.eval(prefix)
            self._prefix = prefix
        llm.n_tokens = len(prefix)  # drop the previous passage; eval trims the KV cache
        llm.eval(suffix)
        logits = _last_logits(llm)
        return yes_probability(logits, self._yes, self._no)


def yes_probability(logits: np.ndarray, yes_ids: Sequence[int], no_ids: Sequence[int]) -> float:
    """Softmax restricted to the yes/no ids; the summed probability of the yes ids."""
    yes = logits[list(yes_ids)].astype(np.float64)
    no = logits[list(no_ids)].astype(np.float64)
    top = max(yes.max(), no.max())
    e_yes, e_no = np.exp(yes - top).sum(), np.exp(no - top).sum()
    return float(e_yes / (e_yes + e_no))


def _last_logits(llm: Any) -> np.ndarray:
    """Next-token logits after the last evaluated token (a copy; llama.cpp reuses the buffer)."""
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def _single_token_ids(llm: Any, words: Sequence[str]) -> list[int]:
    """Ids of the words that are one token each (multi-token spellings are skipped)."""
    ids: list[int] = []
    for w in words:
        toks = llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)
        if len(toks) == 1 and toks[0] not in ids:
            ids.append(toks[0])
    if not ids:
        raise ValueError(f"none of {list(words)} is a single token for this model")
    return ids


def _template_pieces(llm: Any) -> tuple[list[int], list[int], list[int]]:
    """Token ids of the rendered chat prompt around the question and the passage slots."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    meta = llm.metadata
    eos = llm._model.token_get_text(llm.token_eos())  # for templates that use them
    bos = llm._model.token_get_text(llm.token_bos())
    fmt = Jinja2ChatFormatter(meta.get("tokenizer.chat_template") or _CHATML, eos, bos)
    user = f"{INSTRUCTION}\n\nQuestion:\n{_Q}\n\nPassage:\n{_P}"
    prompt = fmt(
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
    )
    head, rest = prompt.prompt.split(_Q)
    mid, tail = rest.split(_P)

    def tok(text: str) -> list[int]:
        return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return tok(head), tok(mid), tok(tail)
