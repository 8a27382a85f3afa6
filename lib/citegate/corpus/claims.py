"""A labeled claim set for the claim check: (claim, note) pairs built from the shipped corpora.

The claim check asks whether a sentence of an answer is supported by the note it cites. To put
its threshold where data says, it needs pairs whose answer is known without asking a model. Each
record is one (claim, note) pair with `label` 1 (the note supports the claim) or 0 (it does not).
Every supported kind has an unsupported kind made from the SAME claim against a nearby note of the
same source, so a score can only separate them by what the note says, not by the claim's style:

gita (English only: the shipped data holds English and Hindi translations, no Russian ones)
    `paraphrase` (1): the first sentence or two of one translator's rendering of a verse against
    another translator's rendering of the same verse (the note as the index stores it, IAST text
    included for Sivananda). A true paraphrase: same content, other words.
    `neighbour_verse` (0): the same claim against that other translator's rendering of a
    neighbouring verse of the same chapter. Hard: same speaker, same scene, often the same
    words. Neighbours translated with word-for-word the same text (a verse pair rendered
    together) are skipped: their label would be wrong.

xquad (English and Russian; one question per paragraph)
    Against its own paragraph the answer sentence is a literal substring: supported by
    construction and useless for a threshold. Two honest substitutes instead:
    `answer_sentence` (1) / `other_paragraph` (0), cross-lingual: the sentence of the paragraph
    in language L that holds the question's answer, against the parallel paragraph in the other
    language (a human translation of the same text, so supported) and against another paragraph
    of the same article in the other language. `note_language` differs from `language`, and
    reports must keep these rows apart. They stand for a Russian answer citing an English note,
    which is what the gita corpus (English notes only) gives a Russian question.
    `question_answer` (1) / `question_answer_other` (0), same language: the question followed by
    its answer ("How many points did the Panthers defense surrender? 308") against its own
    paragraph and against the same other paragraph of the article. The question's wording is
    the annotator's, not the paragraph's, so the claim is not a substring.

Groups and splits: a gita pair's group is its claim's verse (`BG 2.13`), an xquad pair's its
article (`xquad:Warsaw`), the same groups the question sets use, and `split` is
`questions.split_of(group)`: a verse or an article never sits on both sides, and its claims sit
on the side of its questions. Sampling is a salted hash (`SALT`), so the set is the same on every
run and a smaller limit gives a subset of a larger one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citegate.core import paths
from citegate.core.errors import InputError
from citegate.corpus.chunking import split_sentences
from citegate.corpus.questions import split_of
from citegate.corpus.sources.address import verse_label
from citegate.corpus.sources.gita import read_verses
from citegate.corpus.sources.xquad import LANGS, load_xquad
from citegate.evaluation.sampling import salted_int, salted_order

SALT = "citegate-claims-v1"
GITA_LIMIT = 300  # verses: 600 pairs
XQUAD_LIMIT = 100  # questions: 8 pairs each (2 languages x 4 kinds), 800 pairs
MIN_CLAIM_WORDS = 12  # a first sentence shorter than this takes the next one too
MIN_TEXT_WORDS = 5  # a translation shorter than this is no translation ("No changes needed.")
GITA_FILES = ("verse.json", "translation.json", "authors.json")
# positive kind -> its negative kind (the same claim against a nearby note)
FAMILIES = {
    "paraphrase": "neighbour_verse",
    "answer_sentence": "other_paragraph",
    "question_answer": "question_answer_other",
}
_PARAGRAPH = re.compile(r"\n\s*\n")


@dataclass(frozen=True)
class ClaimPair:
    """One labeled (claim, note) pair. `language` is the claim's, `note_language` the note's;
    `family` names the positive kind of the pair's comparison (its positive and negative kinds
    share it); `note_key` is the note's fragment key."""

    id: str
    corpus: str
    language: str
    note_language: str
    label: int
    kind: str
    family: str
    group: str
    claim: str
    note: str
    note_key: str
    split: str

    @property
    def cross_lingual(self) -> bool:
        """Whether claim and note are in different languages."""
        return self.language != self.note_language


def _pair(
    corpus: str,
    claim_lang: str,
    note_lang: str,
    kind: str,
    group: str,
    claim: str,
    note: str,
    note_key: str,
    anchor: str,
) -> ClaimPair:
    family = kind if kind in FAMILIES else next(p for p, n in FAMILIES.items() if n == kind)
    return ClaimPair(
        id=f"{corpus}:{claim_lang}:{kind}:{anchor}",
        corpus=corpus,
        language=claim_lang,
        note_language=note_lang,
        label=int(kind in FAMILIES),
        kind=kind,
        family=family,
        group=group,
        claim=claim,
        note=note,
        note_key=note_key,
        split=split_of(group),
    )


def _require(path: Path) -> None:
    """A one-line refusal when a shipped data file the set is built from is missing."""
    if not path.is_file():
        raise InputError(path, "-", "missing: the claim set is built from this shipped file")


def claim_text(text: str, min_words: int = MIN_CLAIM_WORDS) -> str:
    """A sentence-sized claim from a translation: its first paragraph's first sentence, and the
    next one too while the claim has fewer than `min_words` words (an answer's claims are
    sentences, not whole verses)."""
    first = " ".join(_PARAGRAPH.split(text.strip())[0].split())
    out: list[str] = []
    for sentence in split_sentences(first):
        out.append(sentence)
        if len(" ".join(out).split()) >= min_words:
            break
    return " ".join(out)


# --------------------------------------------------------------------------- gita


def _gita_notes(root: Path) -> dict[tuple[int, int], dict[str, tuple[str, str]]]:
    """(chapter, verse) -> translator slug -> (fragment key, note text as indexed)."""
    for name in GITA_FILES:
        _require(root / name)
    notes: dict[tuple[int, int], dict[str, tuple[str, str]]] = {}
    for f in read_verses(root):
        if f.kind != "verse" or len(f.text.split()) < MIN_TEXT_WORDS:
            continue
        c, v = (int(x) for x in str(f.loc_token).split("."))
        notes.setdefault((c, v), {})[f.source_id] = (f.key, f.text)
    return notes


def _pick(options: Sequence[str], *key: object) -> str:
    """A salted, deterministic choice among `options` (sorted first, so input order is moot)."""
    ordered = sorted(options)
    return ordered[salted_int(SALT, *key) % len(ordered)]


def _gita_verse(
    notes: Mapping[tuple[int, int], Mapping[str, tuple[str, str]]], c: int, v: int
) -> list[ClaimPair]:
    """The paraphrase and neighbour_verse pairs of one verse ([] when it has no usable pair)."""
    here = notes[(c, v)]
    if len(here) < 2:
        return []
    claimant = _pick(list(here), "gita", c, v, "claim")
    writer = _pick([a for a in here if a != claimant], "gita", c, v, "note")
    near = [(c, n) for n in (v - 1, v + 1) if writer in notes.get((c, n), {})]
    near = [r for r in near if notes[r][writer][1] != here[writer][1]]
    if not near:
        return []
    other = near[salted_int(SALT, "gita", c, v, "neighbour") % len(near)]
    claim = claim_text(here[claimant][1])
    label = verse_label(c, v)
    anchor = f"{c}.{v}"
    return [
        _pair(
            "gita", "en", "en", "paraphrase", label, claim, here[writer][1], here[writer][0], anchor
        ),
        _pair(
            "gita",
            "en",
            "en",
            "neighbour_verse",
            label,
            claim,
            notes[other][writer][1],
            notes[other][writer][0],
            anchor,
        ),
    ]


def gita_pairs(limit: int | None = GITA_LIMIT, root: Path | None = None) -> list[ClaimPair]:
    """Two pairs (paraphrase, neighbour_verse) for each of `limit` verses drawn by salted hash."""
    notes = _gita_notes(Path(root or paths.CORPORA / "gita"))
    out: list[ClaimPair] = []
    for c, v in salted_order(notes, lambda r: verse_label(*r), SALT, "gita"):
        if limit is not None and len(out) >= 2 * limit:
            break
        out += _gita_verse(notes, c, v)
    return out


# --------------------------------------------------------------------------- xquad


@dataclass(frozen=True)
class _Item:
    """One question in one language: its article, paragraph, text, answer and answer sentence."""

    title: str
    paragraph: int
    question: str
    answer: str
    sentence: str


def _answer_sentence(context: str, answer: str, start: int) -> str | None:
    """The sentence of `context` that holds the answer at `start` (or its first occurrence)."""
    if context[start : start + len(answer)] != answer:
        start = context.find(answer)
    if start < 0 or not answer.strip():
        return None
    pos = 0
    for sentence in split_sentences(context):
        at = context.find(sentence, pos)
        if at <= start < at + len(sentence):
            return sentence
        pos = at + len(sentence)
    return None


def _xquad_items(lang: str, root: Path) -> tuple[dict[str, _Item], dict[tuple[str, int], str]]:
    """qa id -> `_Item`, and (title, paragraph) -> paragraph text, of one language."""
    _require(root / f"xquad.{lang}.json")
    path, articles = load_xquad(lang, root)
    items: dict[str, _Item] = {}
    paragraphs: dict[tuple[str, int], str] = {}
    for a, art in enumerate(articles, 1):
        if not isinstance(art, dict) or not isinstance(art.get("paragraphs"), list):
            raise InputError(path, a, "article needs a 'title' and a 'paragraphs' list")
        for p, par in enumerate(art["paragraphs"], 1):
            context = str(par.get("context", "")).lstrip("\ufeff").strip()
            paragraphs[(art["title"], p)] = context
            for qa in par.get("qas", []):
                items.update(_xquad_item(art["title"], p, context, qa))
    return items, paragraphs


def _xquad_item(
    title: str, p: int, context: str, qa: Mapping[str, Any]
) -> Iterator[tuple[str, _Item]]:
    """(qa id, `_Item`) for a question whose answer is found in its paragraph; nothing else."""
    answers = qa.get("answers") or [{}]
    answer, start = str(answers[0].get("text", "")), int(answers[0].get("answer_start", -1))
    sentence = _answer_sentence(context, answer, start)
    if sentence and len(sentence.split()) >= MIN_TEXT_WORDS:
        yield str(qa["id"]), _Item(title, p, str(qa["question"]).strip(), answer.strip(), sentence)


def _xquad_question(
    qid: str,
    items: Mapping[str, Mapping[str, _Item]],
    paragraphs: Mapping[str, Mapping[tuple[str, int], str]],
) -> list[ClaimPair]:
    """The eight pairs of one question: four kinds in each claim language."""
    first = items["en"][qid]
    others = sorted(p for (t, p) in paragraphs["en"] if t == first.title and p != first.paragraph)
    far = others[salted_int(SALT, "xquad", qid, "other") % len(others)]
    group = f"xquad:{first.title}"
    out: list[ClaimPair] = []
    for lang in LANGS:
        it, other_lang = items[lang][qid], next(x for x in LANGS if x != lang)
        qa_claim = f"{it.question} {it.answer}"
        for kind, claim, note_lang, p in (
            ("answer_sentence", it.sentence, other_lang, it.paragraph),
            ("other_paragraph", it.sentence, other_lang, far),
            ("question_answer", qa_claim, lang, it.paragraph),
            ("question_answer_other", qa_claim, lang, far),
        ):
            note = paragraphs[note_lang][(it.title, p)]
            key = f"xquad:{note_lang}:{it.title}:{p}"
            out.append(_pair("xquad", lang, note_lang, kind, group, claim, note, key, qid))
    return out


def xquad_pairs(limit: int | None = XQUAD_LIMIT, root: Path | None = None) -> list[ClaimPair]:
    """Eight pairs for each of `limit` questions drawn by salted hash, at most one a paragraph,
    each answered (its answer found in its paragraph) in both languages."""
    root = Path(root or paths.CORPORA / "xquad")
    loaded = {lang: _xquad_items(lang, root) for lang in LANGS}
    items = {lang: loaded[lang][0] for lang in LANGS}
    paragraphs = {lang: loaded[lang][1] for lang in LANGS}
    both = [q for q in items["en"] if all(q in items[lang] for lang in LANGS)]
    seen: set[tuple[str, int]] = set()
    out: list[ClaimPair] = []
    for qid in salted_order(both, str, SALT, "xquad"):
        if limit is not None and len(seen) >= limit:
            break
        where = (items["en"][qid].title, items["en"][qid].paragraph)
        if where in seen or items["ru"][qid].paragraph != where[1]:
            continue
        seen.add(where)
        out += _xquad_question(qid, items, paragraphs)
    return out


def build_claims(
    gita_limit: int | None = GITA_LIMIT,
    xquad_limit: int | None = XQUAD_LIMIT,
    root: Path | None = None,
) -> list[ClaimPair]:
    """The whole claim set: gita pairs then xquad pairs (`root`: the corpora folder)."""
    base = Path(root or paths.CORPORA)
    return gita_pairs(gita_limit, base / "gita") + xquad_pairs(xquad_limit, base / "xquad")
