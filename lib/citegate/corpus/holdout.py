"""Leave-out splits for any corpus: which documents (or which values of a metadata field) a split
build holds out, drawn by salted hash so the draw is fixed by the salt and never by input order.

One mechanism serves every split build. The demo builds are instances of it: `gita-split` holds
out 4 of the 18 gita chapters (`held_out(range(1, 19), "gita", 4)`), `xquad-split` 12 of the 48
XQuAD articles (`held_out(titles, "xquad", 12)`); an imported corpus holds out a share of its
documents (`--holdout 0.25`, namespace `document`) or of the values of one metadata field
(`--holdout-by FIELD`, namespace `FIELD`). The corpus name is not part of the draw, so the same
data imported under another name holds out the same documents. Questions whose relevant documents are all
held out become the split's `out_of_corpus` negatives (see `citegate.corpus.import_sets.split_set`).

Leave-out folds use the same salted order dealt round-robin (`folds`): the demo fold builds
(`gita-fold1..6`, `xquad-fold1..4`) and an imported corpus's `NAME-fold1..K` (`Folds`, from
`citegate data split NAME --folds K [--holdout-by FIELD]`), so every document (or field value) is
held out by exactly one fold build.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from citegate.core.errors import ConfigError
from citegate.evaluation.sampling import salted_order

HOLDOUT_SALT = "citegate-heldout-v1"  # the demo builds' salt: one draw for every split build
DEFAULT_SHARE = 0.25

T = TypeVar("T", bound=Hashable)


def held_out(
    values: Iterable[T], namespace: str, count: int, salt: str = HOLDOUT_SALT
) -> frozenset[T]:
    """The `count` values with the lowest `salted_hash(salt, f"{namespace}:{value}")`."""
    ranked = salted_order(values, lambda v: f"{namespace}:{v}", salt)
    return frozenset(ranked[:count])


def share_count(n: int, share: float) -> int:
    """How many of `n` items a share holds out: rounded, at least 1 and at most n - 1, so a split
    always has both a held-out part and a searched part."""
    check_share(share)
    if n < 2:
        raise ConfigError(f"a leave-out split needs at least 2 items to divide, found {n}")
    return min(n - 1, max(1, round(n * share)))


def check_share(share: float) -> None:
    """A share lies strictly between 0 and 1."""
    if not 0.0 < share < 1.0:
        raise ConfigError(f"--holdout must lie strictly between 0 and 1, got {share:g}")


@dataclass(frozen=True)
class Holdout:
    """A leave-out rule: a salted share of documents, or of the values of a metadata field."""

    share: float = DEFAULT_SHARE
    field: str | None = None
    salt: str = HOLDOUT_SALT

    def __post_init__(self) -> None:
        check_share(self.share)
        if self.field is not None and not self.field.strip():
            raise ConfigError("--holdout-by needs a metadata field name")

    @property
    def spec(self) -> str:
        """The rule as one stable string: part of the split build's id and origin."""
        unit = f"field {self.field}" if self.field else "documents"
        return f"{self.share:g} of {unit} (salt {self.salt})"

    def to_json(self) -> dict[str, object]:
        """The rule as recorded in an import's build.json."""
        return {"share": self.share, "field": self.field, "salt": self.salt}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Holdout:
        """The rule recorded by `to_json`."""
        field = data.get("field")
        return cls(
            float(data["share"]),  # type: ignore[arg-type]
            None if field is None else str(field),
            str(data.get("salt", HOLDOUT_SALT)),
        )

    def documents(self, field_of: Mapping[str, str | None]) -> frozenset[str]:
        """The held-out document ids. `field_of` maps every document id to its value of
        `self.field` (ignored for a share of documents; the importer refuses a document without
        the field before this is called)."""
        if self.field is None:
            n = share_count(len(field_of), self.share)
            return held_out(field_of, "document", n, self.salt)
        values = sorted({v for v in field_of.values() if v is not None})
        held = held_out(values, self.field, share_count(len(values), self.share), self.salt)
        return frozenset(d for d, v in field_of.items() if v in held)


def folds(values: Iterable[T], namespace: str, k: int, salt: str = HOLDOUT_SALT) -> dict[T, int]:
    """Every value's leave-out fold, 1..k: the values in salted-hash order (`held_out`'s order),
    dealt round-robin, so the folds differ in size by at most one and each value is held out by
    exactly one fold build. The same salt and namespace give the same folds on any machine."""
    ranked = salted_order(values, lambda v: f"{namespace}:{v}", salt)
    if not 2 <= k <= len(ranked):
        raise ConfigError(
            f"{k} leave-out folds need 2 to {len(ranked)} (the number of {namespace} units) folds"
        )
    return {v: i % k + 1 for i, v in enumerate(ranked)}


DEFAULT_FOLDS = 4  # an imported corpus's fold count: each fold holds out DEFAULT_SHARE (1/4)


@dataclass(frozen=True)
class Folds:
    """A leave-out fold rule for an imported corpus: its documents (or the values of a metadata
    field) dealt into `k` folds by `folds`; fold build i holds out fold i's documents."""

    k: int = DEFAULT_FOLDS
    field: str | None = None
    salt: str = HOLDOUT_SALT

    def __post_init__(self) -> None:
        if self.field is not None and not self.field.strip():
            raise ConfigError("--holdout-by needs a metadata field name")

    @property
    def spec(self) -> str:
        """The rule as one stable string: part of each fold build's id and origin."""
        unit = f"field {self.field}" if self.field else "documents"
        return f"{self.k} folds of {unit} (salt {self.salt})"

    def to_json(self) -> dict[str, object]:
        """The rule as recorded in an import's build.json."""
        return {"k": self.k, "field": self.field, "salt": self.salt}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Folds:
        """The rule recorded by `to_json`."""
        field = data.get("field")
        return cls(
            int(data["k"]),  # type: ignore[call-overload]
            None if field is None else str(field),
            str(data.get("salt", HOLDOUT_SALT)),
        )

    def assign(self, field_of: Mapping[str, str | None], corpus: str) -> dict[str, int]:
        """document id -> the fold (1..k) that holds it out. `field_of` maps every document id
        to its value of `self.field` (ignored for folds of documents). A k below 2 or above the
        number of units (documents, or distinct field values) raises one `ConfigError` line
        naming `corpus`."""
        if self.field is None:
            units: list[str] = sorted(field_of)
            namespace, what = "document", "documents"
        else:
            units = sorted({v for v in field_of.values() if v is not None})
            namespace, what = self.field, f"values of metadata.{self.field}"
        if len(units) < 2:
            raise ConfigError(f"{corpus}: {len(units)} {what} cannot be cut into leave-out folds")
        if not 2 <= self.k <= len(units):
            raise ConfigError(
                f"{corpus}: --folds {self.k} is out of range: a corpus with {len(units)} "
                f"{what} takes 2 to {len(units)} leave-out folds"
            )
        by_unit = folds(units, namespace, self.k, self.salt)
        if self.field is None:
            return {d: by_unit[d] for d in field_of}
        return {d: by_unit[v] for d, v in field_of.items() if v is not None}
