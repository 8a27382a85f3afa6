"""Rebuild `data/examples/xquad-mini/` (a small BEIR-format collection) from the XQuAD English file
shipped in `data/corpora/xquad/` (CC BY-SA 4.0): 30 of the 48 articles, every paragraph of them as
a document, and 3 questions per article, each judged relevant to its own paragraph. The draw is a
salted hash, so the same files come out every time:

    PYTHONPATH=lib python data/examples/make_xquad_mini.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from citegate.core import paths
from citegate.corpus.sources.xquad import load_xquad
from citegate.evaluation.sampling import salted_sample

SALT = "citegate-example-v1"
ARTICLES = 30
QUESTIONS_PER_ARTICLE = 3
OUT = paths.DATA / "examples" / "xquad-mini"


def main() -> None:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv."""
    _, articles = load_xquad("en")
    chosen = salted_sample(articles, lambda a: a["title"], ARTICLES, SALT)
    chosen.sort(key=lambda a: a["title"])
    docs, queries, qrels = [], [], []
    for art in chosen:
        title = art["title"].replace("_", " ")
        pool = []
        for p, par in enumerate(art["paragraphs"], 1):
            did = f"{art['title']}-{p}"
            docs.append(
                {"_id": did, "title": title, "text": par["context"], "metadata": {"article": title}}
            )
            pool += [(qa, did) for qa in par["qas"]]
        for qa, did in salted_sample(pool, lambda x: x[0]["id"], QUESTIONS_PER_ARTICLE, SALT):
            queries.append({"_id": qa["id"], "text": qa["question"]})
            qrels.append(f"{qa['id']}\t{did}\t1")
    (OUT / "qrels").mkdir(parents=True, exist_ok=True)
    _jsonl(OUT / "corpus.jsonl", docs)
    _jsonl(OUT / "queries.jsonl", queries)
    (OUT / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(r + "\n" for r in qrels), encoding="utf-8"
    )
    shutil.copy(paths.CORPORA / "xquad" / "CC-BY-SA4.0.txt", OUT / "LICENSE.CC-BY-SA-4.0.txt")
    print(f"{len(docs)} documents, {len(queries)} queries -> {OUT}")


def _jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


if __name__ == "__main__":
    main()
