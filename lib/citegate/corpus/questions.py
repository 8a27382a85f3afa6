"""Labeled question sets: a typed format, a deterministic builder from the sources in
`data/questions/`, gold references resolved against the database, splits and content digests.

Labels: `answerable` (gold fragments exist in the set's corpus build), `out_of_corpus` (in scope, but
the gold lies only in a held-out part), `out_of_scope` (a gita/xquad assistant must decline).
Splits: `tune` / `test` by a salted hash of the question's group (its gold verse or article), so a
verse or an article never sits on both sides.
Audits: a set with a label audit (`data/questions/audits/<set>.jsonl`, `citegate.corpus.audit`)
carries each judged question's `audit` and supporting `audit_address`; `audited_label` turns an
`out_of_corpus` question the judge found answerable from the indexed corpus into
`held_out_answerable`. The raw `label` never changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from citegate.core import paths
from citegate.core.errors import ConfigError, InputError
from citegate.core.inputs import check_name, loads_json
from citegate.corpus.audit import (
    HELD_OUT_ANSWERABLE,
    JUDGMENTS,
    Judgment,
    audit_path,
    check_against,
    check_fold_addresses,
    load_audit,
)
from citegate.corpus.builds import (
    BUILDS,
    DEMO_FOLDS,
    DOC_LOC_PREFIX,
    build_id,
    gita_chapter_folds,
    heldout_gita_chapters,
    heldout_xquad_articles,
    import_document_folds,
    imported_set_path,
    parent_build,
    parse_fold,
    xquad_article_folds,
)
from citegate.corpus.sources.address import find_verse_refs, verse_label
from citegate.corpus.sources.xquad import load_xquad, paragraph_key
from citegate.evaluation.sampling import salted_int

LABELS = ("answerable", "out_of_corpus", "out_of_scope")
SPLITS = ("tune", "test")
SPLIT_SALT = "citegate-split-v1"
FOLD_SALT = "citegate-fold-v1"  # out-of-scope questions' folds
SETS = ("gita", "gita-split", "xquad", "xquad-split", "out-of-scope")
ANY_CORPUS = "*"
_ADDRESS_WORDS = re.compile(r"\b(chapter|verse|shloka|глав\w*|стих\w*|अध्याय|श्लोक)\b", re.I)


@dataclass(frozen=True)
class Question:
    """One labeled question."""

    id: str
    text: str
    language: str
    label: str
    gold: tuple[str, ...]
    origin: str
    split: str
    corpus: str
    group: str
    topic: str = ""
    mentions_address: bool = False
    audit: str = ""  # "" not audited | "answerable" | "not_answerable" | "ambiguous"
    audit_address: str = ""  # the indexed verse that answers it, when audit == "answerable"

    @property
    def audited_label(self) -> str:
        """`held_out_answerable` for an `out_of_corpus` question judged answerable from the
        indexed corpus; otherwise the raw `label` (unaudited, ambiguous and other labels)."""
        if self.label == "out_of_corpus" and self.audit == "answerable":
            return HELD_OUT_ANSWERABLE
        return self.label

    def to_json(self) -> str:
        """One JSONL line. Empty audit fields are left out, so an unaudited set's lines (and
        its digest) are what they were before audits existed."""
        d = asdict(self)
        d["gold"] = list(self.gold)
        for name in ("audit", "audit_address"):
            if not d[name]:
                del d[name]
        return json.dumps(d, ensure_ascii=False)


@dataclass(frozen=True)
class QuestionSet:
    """A named set, the corpus build it is labeled against, and its content digest."""

    name: str
    corpus: str
    questions: tuple[Question, ...]

    @property
    def digest(self) -> str:
        """sha256 of the set's JSONL content: logged with every run that uses the set."""
        return hashlib.sha256(
            "\n".join(q.to_json() for q in self.questions).encode("utf-8")
        ).hexdigest()

    def build_id(self) -> str:
        """The corpus build id the labels refer to ('*' for out-of-scope sets)."""
        return ANY_CORPUS if self.corpus == ANY_CORPUS else build_id(self.corpus)

    def where(self, **conds: Any) -> list[Question]:
        """Questions whose fields equal the given values (e.g. label="answerable", split="tune")."""
        return [q for q in self.questions if all(getattr(q, k) == v for k, v in conds.items())]


def split_of(group: str) -> str:
    """`tune` or `test`, fixed by a salted hash of the group (50/50)."""
    return SPLITS[salted_int(SPLIT_SALT, group) % 2]


def mentions_address(text: str) -> bool:
    """True when a question names its verse (a known shortcut in generated questions)."""
    return bool(find_verse_refs(text) or _ADDRESS_WORDS.search(text))


# ---------------------------------------------------------------- building from sources


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line; bad UTF-8, bad JSON or a non-object line
    raises `InputError` naming the file and the line (a record's number is its line number)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InputError(path, "-", f"not UTF-8 at byte {exc.start}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = loads_json(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                path, n, f"not valid JSON at line {n}, column {exc.colno}: {exc.msg}"
            ) from None
        if not isinstance(rec, dict):
            raise InputError(path, n, f"expected a JSON object, got {_json_type(rec)}")
        yield n, rec


def _check_fields(path: Path, n: int, rec: dict[str, Any], types: Mapping[str, type]) -> None:
    """Every field in `types` is present with that JSON type (bool is not an int here)."""
    missing = sorted(set(types) - set(rec))
    if missing:
        raise InputError(path, n, f"missing field(s) {missing}")
    for name, kind in types.items():
        value = rec[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(
                path,
                n,
                f"field {name!r} must be {_JSON_NAMES[kind]}, got {_json_type(value)} "
                f"{_show(value)}",
            )


def records(path: Path, types: Mapping[str, type]) -> list[dict[str, Any]]:
    """The records of a JSON-lines file, each checked to carry `types` (field -> JSON type);
    every problem an `InputError` naming the file and the line."""
    return _jsonl(path, types)


def _jsonl(path: Path, types: Mapping[str, type]) -> list[dict[str, Any]]:
    """The records of a source file, each checked to carry `types` (what its reader uses)."""
    out = []
    for n, rec in _records(path):
        _check_fields(path, n, rec, types)
        out.append(rec)
    return out


_JSON_NAMES: dict[type, str] = {
    str: "a string",
    int: "an integer",
    list: "a list",
    bool: "true/false",
}


def _json_type(value: object) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number" if isinstance(value, int | float) else "?")


def _show(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _q(
    qid: str,
    text: str,
    lang: str,
    label: str,
    gold: Sequence[str],
    origin: str,
    corpus: str,
    group: str,
    topic: str = "",
) -> Question:
    return Question(
        qid,
        " ".join(text.split()),
        lang,
        label,
        tuple(gold),
        origin,
        split_of(group),
        corpus,
        group,
        topic,
        mentions_address(text),
    )


def _gitaverse() -> list[Question]:
    path = paths.QUESTIONS / "sources" / "gitaverse" / "gitaverse_dev.jsonl"
    origin = "GitaVerse-Open-Corpus HF1 (GPT-4.1 generated, human reviewed upstream; CC BY 4.0)"
    out = []
    types = {"qid": str, "question": str, "language": str, "chapter": int, "verse": int}
    for r in _jsonl(path, types):
        gold = verse_label(r["chapter"], r["verse"])
        out.append(
            _q(r["qid"], r["question"], r["language"], "answerable", [gold], origin, "gita", gold)
        )
    return out


def _written_ru() -> list[Question]:
    path = paths.QUESTIONS / "src" / "gita_ru_written.jsonl"
    return [
        _q(r["id"], r["text"], "ru", "answerable", r["gold"], r["origin"], "gita", r["gold"][0])
        for r in _jsonl(path, {"id": str, "text": str, "gold": list, "origin": str})
    ]


def _xquad() -> list[Question]:
    out = []
    for lang in ("en", "ru"):
        _, articles = load_xquad(lang)
        for art in articles:
            for p, par in enumerate(art["paragraphs"], 1):
                gold = paragraph_key(lang, art["title"], p)
                for qa in par["qas"]:
                    out.append(
                        _q(
                            f"xquad-{lang}-{qa['id']}",
                            qa["question"],
                            lang,
                            "answerable",
                            [gold],
                            "XQuAD (CC BY-SA 4.0)",
                            "xquad",
                            f"xquad:{art['title']}",
                        )
                    )
    return out


def _out_of_scope() -> list[Question]:
    nq = paths.QUESTIONS / "sources" / "nq_open" / "nq_open_dev_sample1000.jsonl"
    out = [
        _q(
            f"nq-{i:04d}",
            r["question"],
            "en",
            "out_of_scope",
            [],
            "NQ-open dev sample (CC BY-SA 3.0)",
            ANY_CORPUS,
            f"nq-{i:04d}",
            "general",
        )
        for i, r in enumerate(_jsonl(nq, {"question": str}))
    ]
    written = paths.QUESTIONS / "src" / "out_of_scope_written.jsonl"
    out += [
        _q(
            r["id"],
            r["text"],
            r["language"],
            "out_of_scope",
            [],
            r["origin"],
            ANY_CORPUS,
            r["id"],
            r.get("topic", ""),
        )
        for r in _jsonl(written, {"id": str, "text": str, "language": str, "origin": str})
    ]
    return out


def _dedup(qs: Iterable[Question]) -> list[Question]:
    seen: set[str] = set()
    out = []
    for q in qs:
        norm = q.text.casefold()
        if norm not in seen:
            seen.add(norm)
            out.append(q)
    return out


def _chapter(address: str) -> int:
    """The chapter of a verse address: "BG 3.5" -> 3."""
    return int(address.split()[1].split(".")[0])


def _relabel_gita(
    q: Question, held: frozenset[int] | None = None, corpus: str = "gita-split"
) -> Question:
    """`q` labeled against a build that holds out chapters `held` (default gita-split's):
    out_of_corpus when every gold verse is held out, else answerable with the indexed gold."""
    held = heldout_gita_chapters() if held is None else held
    chapters = {_chapter(g) for g in q.gold}
    label = "out_of_corpus" if chapters <= held else "answerable"
    gold = (
        q.gold if label == "out_of_corpus" else tuple(g for g in q.gold if _chapter(g) not in held)
    )
    return replace(q, corpus=corpus, label=label, gold=gold)


def _relabel_xquad(
    q: Question, held: frozenset[str] | None = None, corpus: str = "xquad-split"
) -> Question:
    held = heldout_xquad_articles() if held is None else held
    label = "out_of_corpus" if q.group.split(":", 1)[1] in held else "answerable"
    return replace(q, corpus=corpus, label=label)


def fold_audit_name(base: str) -> str:
    """The one audit file of every fold set of `base` (`gita-folds`): a question is
    out_of_corpus in exactly one fold set, so one judgment per question serves them all."""
    return f"{base}-folds"


def question_fold(q: Question) -> int:
    """The leave-out fold that holds out the question's group (its verse's chapter, its
    article) — the fold in which it is out_of_corpus; an out-of-scope question's fold is drawn
    by salted hash of its group, 1..k of the corpus it is asked of (`scope_fold`).

    An imported question's group is its first relevant document (`NAME:<doc id>`, ids sorted),
    so its fold is the fold that holds that document out (`builds.import_document_folds`). A
    question whose relevant documents all lie in one fold is out_of_corpus there and nowhere
    else; one whose documents span folds is out_of_corpus in no fold build (some of its gold is
    always indexed) and belongs, deterministically, to its first document's fold."""
    base = parent_build(q.corpus)
    if base == "gita":
        return gita_chapter_folds()[_chapter(q.group)]
    if base == "xquad":
        return xquad_article_folds()[q.group.split(":", 1)[1]]
    doc_folds = import_document_folds(base)
    prefix, _, doc = q.group.partition(":")
    if doc_folds and prefix == base and doc in doc_folds:
        return doc_folds[doc]
    raise ConfigError(f"question {q.id}: corpus {q.corpus!r} has no leave-out folds")


def scope_fold(q: Question, k: int) -> int:
    """The fold (1..k) of a question that no corpus answers (out_of_scope): a salted hash of
    its group, so its rows stay in one fold however many fold builds it is asked against."""
    return salted_int(FOLD_SALT, q.group) % k + 1


def fold_set(name: str, audits: Path | None = None) -> QuestionSet:
    """Fold set `gita-fold3`: the full set's questions labeled against fold build 3 (its
    held-out chapters' questions out_of_corpus), with the judgments of the base's fold audit
    whose label matches this set (a judged out_of_corpus question carries its judgment only in
    the fold that holds it out)."""
    fold = parse_fold(name)
    if fold is None or name not in BUILDS:
        raise InputError(f"{name}.jsonl", "-", f"no fold build {name!r}")
    base, k = fold
    full = load_set(base)
    held_ch = frozenset(c for c, i in gita_chapter_folds().items() if i == k)
    if base == "gita":
        qs = tuple(_relabel_gita(q, held_ch, name) for q in full.questions)
    else:
        held_ar = frozenset(t for t, i in xquad_article_folds().items() if i == k)
        qs = tuple(_relabel_xquad(q, held_ar, name) for q in full.questions)
    path = audit_path(fold_audit_name(base), audits)
    labels = {q.id: q.label for q in qs}
    audit = {i: j for i, j in load_audit(path, frozenset()).items() if labels.get(i) == j.label}
    if base == "gita":
        check_fold_addresses(path, audit, held_ch)
    return _with_audit(QuestionSet(name, name, qs), audit)


def build_sets(audits: Path | None = None) -> dict[str, QuestionSet]:
    """Every question set, rebuilt deterministically from the sources; a set with an audit file
    in `audits` (default `data/questions/audits/`) carries its judgments."""
    gita = _dedup(_gitaverse() + _written_ru())
    xq = _dedup(_xquad())
    sets = {
        "gita": QuestionSet("gita", "gita", tuple(gita)),
        "gita-split": QuestionSet("gita-split", "gita-split", tuple(map(_relabel_gita, gita))),
        "xquad": QuestionSet("xquad", "xquad", tuple(xq)),
        "xquad-split": QuestionSet("xquad-split", "xquad-split", tuple(map(_relabel_xquad, xq))),
        "out-of-scope": QuestionSet("out-of-scope", ANY_CORPUS, tuple(_dedup(_out_of_scope()))),
    }
    return {name: apply_audit(s, audit_path(name, audits)) for name, s in sets.items()}


def apply_audit(qset: QuestionSet, path: Path) -> QuestionSet:
    """The set with the judgments of the audit file at `path` copied into its questions (the
    set itself when there is no such file). An audited id missing from the set, or judged under
    another label, raises `InputError` naming the audit file and line."""
    audit = load_audit(path)
    if not audit:
        return qset
    check_against(path, audit, {q.id: q.label for q in qset.questions})
    return _with_audit(qset, audit)


def _with_audit(qset: QuestionSet, audit: Mapping[str, Judgment]) -> QuestionSet:
    qs = tuple(
        replace(q, audit=audit[q.id].judgment, audit_address=audit[q.id].address)
        if q.id in audit
        else q
        for q in qset.questions
    )
    return QuestionSet(qset.name, qset.corpus, qs)


def write_sets(sets: dict[str, QuestionSet], folder: Path | None = None) -> None:
    """Write each set as `<name>.jsonl` plus MANIFEST.json (corpus, build id, digest, count)."""
    folder = Path(folder or paths.QUESTIONS)
    manifest = {}
    for name, s in sets.items():
        (folder / f"{name}.jsonl").write_text(
            "".join(q.to_json() + "\n" for q in s.questions), encoding="utf-8"
        )
        manifest[name] = {
            "corpus": s.corpus,
            "build_id": s.build_id(),
            "digest": s.digest,
            "questions": len(s.questions),
        }
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- loading and checking

_TYPES: dict[str, type] = {
    "id": str,
    "text": str,
    "language": str,
    "label": str,
    "gold": list,
    "origin": str,
    "split": str,
    "corpus": str,
    "group": str,
}
_OPTIONAL: dict[str, type] = {
    "topic": str,
    "mentions_address": bool,
    "audit": str,
    "audit_address": str,
}


def _parse(path: Path, n: int, rec: dict[str, Any]) -> Question:
    """One validated question of a set file (`n`: its line number)."""
    unknown = sorted(set(rec) - set(_TYPES) - set(_OPTIONAL))
    if unknown:
        raise InputError(path, n, f"unknown field(s) {unknown}")
    _check_fields(path, n, rec, _TYPES)
    _check_fields(path, n, rec, {k: t for k, t in _OPTIONAL.items() if k in rec})
    if rec["label"] not in LABELS or rec["split"] not in SPLITS:
        raise InputError(path, n, f"bad label {rec['label']!r} or split {rec['split']!r}")
    if not rec["text"].strip() or not rec["id"].strip():
        raise InputError(path, n, "empty question id or text")
    if not all(isinstance(g, str) for g in rec["gold"]):
        raise InputError(path, n, "gold must be a list of references (strings)")
    if (rec["label"] == "out_of_scope") != (not rec["gold"]):
        raise InputError(path, n, "out_of_scope questions have no gold; the others need gold")
    if rec.get("audit", "") not in ("", *JUDGMENTS):
        raise InputError(path, n, f"audit {rec['audit']!r} is not one of {JUDGMENTS}")
    if bool(rec.get("audit_address")) and rec.get("audit") != "answerable":
        raise InputError(path, n, "audit_address is only set for an 'answerable' audit")
    return Question(**{**rec, "gold": tuple(rec["gold"])})


def load_set(name: str, folder: Path | None = None) -> QuestionSet:
    """Read and validate `data/questions/<name>.jsonl` (schema and types, labels, unique ids,
    one corpus per set); every problem raises `InputError` naming the file and the line. `name`
    is a plain name (`core.inputs.check_name`): a path in it is refused, never read."""
    check_name("question set", name)
    if folder is None and (fold := parse_fold(name)) and fold[0] in DEMO_FOLDS:
        return fold_set(name)
    path = Path(folder or paths.QUESTIONS) / f"{name}.jsonl"
    if folder is None and not path.exists():  # a set written by `citegate data import-beir`
        path = imported_set_path(name) or path
    if not path.exists():
        raise InputError(path, "-", f"no question set {name!r} (known: {', '.join(SETS)})")
    qs: list[Question] = []
    lines: dict[str, int] = {}
    for n, rec in _records(path):
        q = _parse(path, n, rec)
        if q.id in lines:
            raise InputError(path, n, f"duplicate id {q.id!r} (first on line {lines[q.id]})")
        lines[q.id] = n
        qs.append(q)
    corpora = {q.corpus for q in qs}
    if len(corpora) != 1:
        raise InputError(path, "-", f"a set is labeled against one corpus build, found {corpora}")
    return QuestionSet(name, corpora.pop(), tuple(qs))


def resolve_gold(
    conn: psycopg.Connection,
    qset: QuestionSet,
    embedder_id: str,
) -> dict[str, list[int]]:
    """question id -> gold fragment ids in the set's corpus build (verses at an address, or a
    paragraph by key). An `answerable` reference that resolves to nothing is an error; an
    `out_of_corpus` one must resolve in the full build and not in the split build."""
    out: dict[str, list[int]] = {}
    for q in qset.questions:
        if q.label == "out_of_scope":
            continue
        corpus = q.corpus if q.label == "answerable" else parent_build(q.corpus)
        ids = _gold_ids(conn, corpus, q.gold, embedder_id)
        if not ids:
            raise InputError(
                f"{qset.name}.jsonl", q.id, f"gold {list(q.gold)} not found in {corpus!r}"
            )
        if q.label == "out_of_corpus" and _gold_ids(conn, q.corpus, q.gold, embedder_id):
            raise InputError(f"{qset.name}.jsonl", q.id, f"out_of_corpus gold is in {q.corpus!r}")
        out[q.id] = ids if q.label == "answerable" else []
    return out


def _gold_ids(
    conn: psycopg.Connection,
    corpus: str,
    gold: Sequence[str],
    embedder_id: str,
) -> list[int]:
    # An imported fragment (loc_token "doc#<chunk>") is addressed by its document id.
    rows = conn.execute(
        "SELECT id FROM fragments WHERE embedder_id = %s AND corpus = %s AND "
        "((kind = 'verse' OR starts_with(loc_token, %s)) AND addr_label = ANY(%s) "
        "OR frag_key = ANY(%s)) ORDER BY id",
        (embedder_id, corpus, DOC_LOC_PREFIX, list(gold), list(gold)),
    ).fetchall()
    return [r[0] for r in rows]


def check_set(qset: QuestionSet) -> list[str]:
    """Problems that need no database: duplicate ids/texts, a group on both splits."""
    problems = []
    ids = Counter(q.id for q in qset.questions)
    texts = Counter(q.text.casefold() for q in qset.questions)
    problems += [f"{qset.name}: duplicate id {i}" for i, n in ids.items() if n > 1]
    problems += [f"{qset.name}: duplicate text {t[:60]!r}" for t, n in texts.items() if n > 1]
    sides: dict[str, set[str]] = {}
    for q in qset.questions:
        sides.setdefault(q.group, set()).add(q.split)
    problems += [f"{qset.name}: group {g} on both splits" for g, s in sides.items() if len(s) > 1]
    return problems


def counts_table(sets: Iterable[QuestionSet]) -> list[tuple[str, str, str, str, int]]:
    """(set, label, language, split, n) rows, sorted."""
    c = Counter((s.name, q.label, q.language, q.split) for s in sets for q in s.questions)
    return sorted((*k, n) for k, n in c.items())
