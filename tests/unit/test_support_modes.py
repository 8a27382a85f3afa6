"""Each writer's claims are checked in the support mode certified for them: the extractive
composer's quotes as the config's `support_mode` says (production: pp-sentence), the generative
and outline composers' and the fallback model's own words in the mode certified for paraphrase
(qp-sentence). pp-sentence lets an invented detail beside a true one pass; the bundled embedder
and production's config show it on a small folder corpus's note about bees."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import make_candidate
from llm_stub import reply, stub_server

from citegate.core.config import (
    COMPOSER_CLAIMS,
    COMPOSERS,
    FALLBACK_CLAIMS,
    PARAPHRASE_SUPPORT_MODES,
    PipelineConfig,
    load_config,
)
from citegate.core.config_files import production
from citegate.core.errors import ConfigError
from citegate.core.types import ClaimStatus
from citegate.models.embed import default_embedder
from citegate.models.llm import ChatClient
from citegate.pipeline.roles import RoleClients
from citegate.pipeline.support import support_scores
from citegate.pipeline.turn import Grounded, checked, grounded_answer

EMB = default_embedder()
PROD = production()
BEES = make_candidate(
    corpus="bees",
    kind="document",
    addr_label="bees ¶1",
    text=(
        "Honey bees communicate the location of food sources to other bees using the waggle "
        "dance. The angle of the dance shows the direction of the food relative to the sun."
    ),
)
# The true part (bees communicate by a dance) beside invented details the note never states.
INVENTED = "Honey bees communicate using pheromones and the dance of the queen."
FAITHFUL = "Bees use the waggle dance to show other bees where food sources are."


def generative_answer(tmp_path: Path, answer: str, cfg: PipelineConfig) -> Grounded:
    """`answer` as the generative composer's reply over the bees note, checked as a turn does."""
    with stub_server([reply(answer)]) as stub:
        client = ChatClient("stub-model", stub.base_url, cache_path=tmp_path / "llm.sqlite")
        roles = RoleClients.single(client, cfg)
        g, _ = grounded_answer("How do bees communicate?", "en", [BEES], cfg, EMB, roles)
    return g


def test_every_composer_declares_what_its_claims_are() -> None:
    assert set(COMPOSER_CLAIMS) == set(COMPOSERS)
    assert COMPOSER_CLAIMS["extractive"] == "quote" and FALLBACK_CLAIMS == "paraphrase"
    assert {COMPOSER_CLAIMS["generative"], COMPOSER_CLAIMS["outline"]} == {"paraphrase"}


def test_production_checks_quotes_in_its_promoted_mode_and_paraphrase_in_qp_sentence() -> None:
    assert PROD.composer == "extractive"  # production's answers stay extractive
    assert PROD.claim_check("quote") == (PROD.support_mode, PROD.support_threshold)
    assert PROD.claim_check("quote") == ("pp-sentence", pytest.approx(0.9121, abs=1e-4))
    assert PROD.claim_check("paraphrase") == ("qp-sentence", pytest.approx(0.8948, abs=1e-4))
    with pytest.raises(ValueError, match="claims must be one of"):
        PROD.claim_check("summary")


def test_a_paraphrase_mode_not_certified_for_paraphrase_is_refused(tmp_path: Path) -> None:
    assert PARAPHRASE_SUPPORT_MODES == ("qp-sentence",)
    with pytest.raises(ConfigError, match="certified for paraphrased claims"):
        PipelineConfig(paraphrase_support_mode="pp-sentence")
    path = tmp_path / "cfg.yaml"
    path.write_text("composer: generative\nparaphrase_support_mode: qq-sentence\n", "utf-8")
    with pytest.raises(ConfigError, match="got 'qq-sentence'"):
        load_config(path)
    with pytest.raises(ConfigError, match="paraphrase_support_threshold must be in"):
        PipelineConfig(paraphrase_support_threshold=1.5)


def test_the_invented_bees_sentence_passes_pp_sentence_but_not_the_paraphrase_check() -> None:
    pp = float(support_scores(EMB, [INVENTED], [BEES.text], "pp-sentence")[0, 0])
    qp = float(support_scores(EMB, [INVENTED], [BEES.text], "qp-sentence")[0, 0])
    assert pp >= PROD.support_threshold  # checked as a quote, it would be shown supported
    assert qp < PROD.paraphrase_support_threshold


def test_the_generative_composer_does_not_show_the_invented_bees_sentence_supported(
    tmp_path: Path,
) -> None:
    cfg = PROD.replace(composer="generative")
    g = generative_answer(tmp_path, f"{INVENTED} [1]", cfg)
    assert g.check is not None and g.check.scorer.endswith("qp-sentence")
    assert g.check.threshold == pytest.approx(PROD.paraphrase_support_threshold)
    (verdict,) = g.check.verdicts
    assert verdict.status == ClaimStatus.UNSUPPORTED and not verdict.shown_ok
    assert "[unsupported: best" in g.text and "[bees ¶1]" in g.text


def test_the_generative_composer_keeps_a_faithful_paraphrase(tmp_path: Path) -> None:
    g = generative_answer(tmp_path, f"{FAITHFUL} [1]", PROD.replace(composer="generative"))
    assert g.check is not None and g.check.verdicts[0].status == ClaimStatus.SUPPORTED
    assert g.text == f"- {FAITHFUL} [bees ¶1]"


def test_the_extractive_composer_keeps_its_mode_and_threshold() -> None:
    with RoleClients(PROD) as roles:
        g, _ = grounded_answer("How do bees communicate?", "en", [BEES], PROD, EMB, roles)
    assert g.check is not None and g.check.scorer.endswith(" pp-sentence")
    assert g.check.threshold == PROD.support_threshold
    assert g.check.verdicts and all(v.shown_ok for v in g.check.verdicts)


def test_the_fallback_answer_is_checked_as_paraphrase() -> None:
    offered = {"1": BEES.text}
    check = checked(f"{INVENTED} [1]", offered, PROD, EMB, claims=FALLBACK_CLAIMS)
    assert check.scorer.endswith("qp-sentence") and not check.verdicts[0].shown_ok
