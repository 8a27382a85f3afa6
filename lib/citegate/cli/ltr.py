"""`citegate ltr train`: train the learning-to-rank reranker on the tune split and save it
(`citegate.research.ltr_training` does the work; this module only parses and prints)."""

from __future__ import annotations

import argparse

from citegate.core.config import LEXICAL_BACKENDS
from citegate.models.ltr.features import OPTIONAL_FEATURES
from citegate.models.ltr.model import DEFAULT_NAME, bare_name
from citegate.research.ltr_training import DEFAULT_SETS, current_reason, train_ltr
from citegate.store.db import connect


def cmd_train(args: argparse.Namespace) -> int:
    """`citegate ltr train`: train, save, print a summary."""
    if args.if_stale and (
        why := current_reason(
            args.name, args.sets, args.limit, args.extra_features, args.lexical_backend
        )
    ):
        print(f"ltr/{bare_name(args.name)} is up to date ({why}); not retraining")
        return 0
    with connect() as conn:
        meta = train_ltr(
            conn,
            args.name,
            tuple(args.sets),
            limit=args.limit,
            models=args.models,
            progress=True,
            extra_features=args.extra_features,
            lexical_backend=args.lexical_backend,
        )
    cv = meta["cv"]["mean"]
    print(f"saved {meta['id']} -> {meta['path']}")
    print(
        f"model {meta['model']}  ({meta['n_questions']} tune questions, {meta['n_pairs']} pairs, "
        f"{meta['n_positive']} positive)"
    )
    print("cv nDCG@10: " + "  ".join(f"{k}={v:.4f}" for k, v in cv.items()))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `citegate ltr train` to the CLI."""
    p = sub.add_parser("ltr", help="learning-to-rank reranker (trained on the tune split)")
    s = p.add_subparsers(dest="ltr_command", required=True)
    t = s.add_parser("train", help="train an LTR reranker on the tune split and save it")
    t.add_argument("--name", default=DEFAULT_NAME, help=f"model name (default {DEFAULT_NAME})")
    t.add_argument(
        "--sets", nargs="+", default=list(DEFAULT_SETS), help="question sets (default gita xquad)"
    )
    t.add_argument("--limit", type=int, default=None, help="at most N tune questions per set")
    t.add_argument(
        "--models",
        nargs="+",
        choices=["hgb", "logreg"],
        help="candidate models (default both; the better cross-validated nDCG@10 wins)",
    )
    t.add_argument(
        "--extra-features",
        nargs="+",
        default=[],
        choices=list(OPTIONAL_FEATURES),
        help="optional pair features to train on beside the default ones (a model file names its "
        "features, so a model trained without them scores on the features it was trained on)",
    )
    t.add_argument(
        "--lexical-backend",
        default="postgres",
        choices=list(LEXICAL_BACKENDS),
        help="the lexical lane that gathers the training pools: the one the reranker will serve "
        "behind (default postgres)",
    )
    t.add_argument(
        "--if-stale",
        action="store_true",
        help="skip training when the saved model was trained on the same inputs",
    )
    t.set_defaults(func=cmd_train)
