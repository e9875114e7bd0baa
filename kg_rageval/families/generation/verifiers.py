"""Judges that produce a :class:`~kg_rageval.families.generation.judgment.Judgment` for an answer.

The structure is extract → verify → aggregate:

* **extract**: a :data:`ClaimExtractor` splits the answer into claims. The default,
  :func:`sentence_claims`, is deterministic sentence splitting (one claim per sentence); an LLM
  extractor is any callable ``str -> list[str]``.
* **verify**: a :class:`ClaimVerifier` decides per claim whether the context supports it:
  :class:`NLIVerifier` (cross-encoder through sentence-transformers, a *local* model path only),
  :class:`OntologyVerifier` (deterministic: the claim's ontology concepts must appear in the
  cited context).
* **aggregate**: :class:`ExtractVerifyJudge` packs the verdicts into a contract-checked
  judgment; the faithfulness family averages.

:class:`LLMJudge` does all three steps in one call of a ``Callable[[str], str]`` (prompt →
raw text). Its raw output is validated by :func:`~kg_rageval.families.generation.judgment.parse_judgment`;
unparseable output counts as ``invalid_judgment``, never as a score. With an Outlines model
(:meth:`LLMJudge.from_outlines`) the output is constrained to the judgment's JSON schema; the
partition rule is still checked afterwards (a schema cannot express it).

A **judge** is any ``Callable[[str answer, list[str] contexts], Judgment | dict | str]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.generation.concepts import ConceptLinker, concepts_in, dictionary_linker

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.generation.judgment import Judgment
    from kg_rageval.ontology import Ontology

ClaimExtractor = Callable[[str], list[str]]
Judge = Callable[[str, Sequence[str]], Any]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentence_claims(text: str) -> list[str]:
    """Claims by sentence splitting: split after ``.``, ``!`` or ``?`` followed by whitespace,
    strip, drop empty pieces and exact repeats (first occurrence kept)."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text or ""):
        piece = piece.strip()
        if piece and piece not in out:
            out.append(piece)
    return out


class ClaimVerifier(Protocol):
    """Decides per claim whether ``contexts`` support it."""

    name: str

    def verify(self, claims: Sequence[str], contexts: Sequence[str]) -> list[bool]: ...


class ExtractVerifyJudge:
    """extract → verify → aggregate into a :class:`Judgment`.

    ``failure_mode`` is ``failure_label`` when any claim is unsupported, else ``None``."""

    def __init__(
        self,
        verifier: ClaimVerifier,
        extractor: ClaimExtractor = sentence_claims,
        *,
        failure_label: str = "unsupported_claim",
    ):
        self.verifier = verifier
        self.extractor = extractor
        self.failure_label = failure_label
        self.name = f"extract-verify:{getattr(verifier, 'name', type(verifier).__name__)}"

    def __call__(self, answer: str, contexts: Sequence[str]) -> Judgment:
        claims = self.extractor(answer)
        verdicts = self.verifier.verify(claims, contexts) if claims else []
        if len(verdicts) != len(claims):
            raise ValueError(f"{self.name}: {len(verdicts)} verdicts for {len(claims)} claims")
        sup = [c for c, ok in zip(claims, verdicts) if ok]
        uns = [c for c, ok in zip(claims, verdicts) if not ok]
        rationale = getattr(self.verifier, "last_rationale", None)
        from kg_rageval.families.generation.judgment import Judgment  # pydantic: only when judging

        return Judgment(
            claims=claims,
            supported=sup,
            unsupported=uns,
            failure_mode=self.failure_label if uns else None,
            rationale=rationale,
        )


class OntologyVerifier:
    """Deterministic ontology check: a claim passes when every ontology concept it names also
    appears in the (cited) context; a claim naming a concept absent from the context is
    flagged unsupported.

    This is a necessary condition, not entailment: it cannot see negation, relations, time or
    numbers ("Paris was founded in 1994" passes against "Paris was not founded in 1994"), so its
    faithfulness is an **upper bound**. A claim naming no concept cannot be checked;
    ``unlinked_claims="pass"`` (default) lets it pass, ``"fail"`` flags it.
    """

    name = "ontology"

    def __init__(
        self,
        ontology: Ontology,
        *,
        linker: ConceptLinker | None = None,
        unlinked_claims: str = "pass",
    ):
        if unlinked_claims not in ("pass", "fail"):
            raise ConfigError(f"unlinked_claims must be 'pass' or 'fail', not {unlinked_claims!r}")
        self.linker = linker or dictionary_linker(ontology)
        self.unlinked_claims = unlinked_claims
        self.last_rationale: str | None = None

    def verify(self, claims: Sequence[str], contexts: Sequence[str]) -> list[bool]:
        seen = concepts_in(contexts, self.linker)
        out, notes = [], []
        for claim in claims:
            named = self.linker(claim)
            if not named:
                ok = self.unlinked_claims == "pass"
                if not ok:
                    notes.append(f"{claim!r}: names no ontology concept")
            else:
                missing = sorted(named - seen)
                ok = not missing
                if missing:
                    notes.append(f"{claim!r}: concept(s) {missing} not in the cited context")
            out.append(ok)
        self.last_rationale = "; ".join(notes) or None
        return out


class NLIVerifier:
    """Claim verification with an NLI cross-encoder (sentence-transformers ``CrossEncoder``).

    Each claim (hypothesis) is scored against each context passage (premise); the claim is
    supported when the largest softmax probability of the entailment label over the passages
    is ``>= threshold`` (default 0.5). The model is loaded from a **local** path with
    ``local_files_only=True``: nothing is fetched from a hub. The entailment label's index
    comes from the model config's ``id2label`` (case-insensitive ``entailment``) unless
    ``entailment_index`` is given. Pass ``model=`` to use an already loaded object with a
    ``predict(pairs, apply_softmax=True)`` method.

    Needs the ``nlp`` extra (``pip install 'kg-rageval[nlp]'``).
    """

    name = "nli"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model: Any = None,
        threshold: float = 0.5,
        entailment_index: int | None = None,
        batch_size: int = 32,
    ):
        if not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"threshold must lie in [0, 1], not {threshold!r}")
        if model is None:
            if model_path is None:
                raise ConfigError("NLIVerifier needs a local model_path or a model object")
            p = Path(model_path)
            if not p.is_dir():
                raise ConfigError(
                    f"NLI model path {str(p)!r} is not a local directory; kg-rageval never "
                    "downloads models at run time"
                )
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ConfigError(
                    "the NLI verifier needs sentence-transformers: pip install 'kg-rageval[nlp]'"
                ) from exc
            if not (p / "config.json").is_file():
                raise ConfigError(
                    f"{p}: not a model directory (no config.json); give a local "
                    "cross-encoder folder, e.g. one saved with CrossEncoder.save()"
                )
            try:
                model = CrossEncoder(str(p), local_files_only=True, device="cpu")
            except (OSError, ValueError) as exc:  # transformers' errors for a broken model folder
                raise ConfigError(f"{p}: cannot load the NLI cross-encoder: {exc}") from None
        self.model = model
        self.threshold = float(threshold)
        self.batch_size = batch_size
        self.entailment_index = (
            entailment_index if entailment_index is not None else self._find_entailment(model)
        )
        self.last_rationale: str | None = None

    @staticmethod
    def _find_entailment(model: Any) -> int:
        config = getattr(model, "config", None) or getattr(getattr(model, "model", None), "config", None)
        id2label = getattr(config, "id2label", None) or {}
        for idx, label in dict(id2label).items():
            if str(label).casefold() == "entailment":
                return int(idx)
        raise ConfigError(
            f"cannot find an 'entailment' label in the model's id2label {dict(id2label)!r}; "
            "pass entailment_index="
        )

    def verify(self, claims: Sequence[str], contexts: Sequence[str]) -> list[bool]:
        import numpy as np

        if not claims:
            return []
        if not contexts:
            self.last_rationale = "no context to verify against"
            return [False] * len(claims)
        pairs = [(ctx, claim) for claim in claims for ctx in contexts]
        probs = np.asarray(self.model.predict(pairs, apply_softmax=True, batch_size=self.batch_size))
        if probs.ndim == 1 and self.entailment_index == 0:
            probs = probs[:, None]  # a single-output scorer (e.g. HHEM): the score itself
        if probs.ndim != 2 or probs.shape[0] != len(pairs) or probs.shape[1] <= self.entailment_index:
            raise ConfigError(
                f"NLI model returned scores of shape {probs.shape}, expected ({len(pairs)}, labels)"
            )
        ent = probs[:, self.entailment_index].reshape(len(claims), len(contexts)).max(axis=1)
        self.last_rationale = "entailment " + ", ".join(f"{p:.3f}" for p in ent.tolist())
        return [bool(p >= self.threshold) for p in ent.tolist()]


JUDGE_PROMPT = """You check whether an answer is faithful to its context.
1. Split the ANSWER into atomic claims (short, self-contained factual statements).
2. For each claim decide whether the CONTEXT supports it.
Reply with one JSON object and nothing else:
{{"claims": [...], "supported": [...], "unsupported": [...],
  "failure_mode": null or a short reason, "rationale": "..."}}
Every claim must appear in exactly one of "supported" and "unsupported", spelled exactly as in
"claims". An answer without factual claims has "claims": [].

CONTEXT:
{context}

ANSWER:
{answer}
"""


class LLMJudge:
    """An LLM judge behind a plain callable ``prompt -> raw text``.

    The raw text is returned unparsed; the scorer validates it (unparseable or contract-breaking
    output counts as ``invalid_judgment``). ``prompt_template`` gets ``{context}`` (passages
    numbered ``[1] ...``) and ``{answer}``."""

    name = "llm"

    def __init__(self, call: Callable[[str], str], *, prompt_template: str = JUDGE_PROMPT):
        self.call = call
        self.prompt_template = prompt_template

    def prompt(self, answer: str, contexts: Sequence[str]) -> str:
        ctx = "\n".join(f"[{i}] {c}" for i, c in enumerate(contexts, start=1)) or "(none)"
        return self.prompt_template.format(context=ctx, answer=answer)

    def __call__(self, answer: str, contexts: Sequence[str]) -> str:
        out = self.call(self.prompt(answer, contexts))
        if not isinstance(out, str):
            out = json.dumps(out) if isinstance(out, dict) else str(out)
        return out

    @classmethod
    def from_outlines(cls, model: Any, **kw: Any) -> LLMJudge:
        """A judge whose output an Outlines generator constrains to the :class:`Judgment` JSON
        schema (``outlines.Generator(model, Judgment)``). Needs the ``outlines`` extra."""
        try:
            import outlines
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(
                "constrained judging needs outlines: pip install 'kg-rageval[outlines]'"
            ) from exc
        from kg_rageval.families.generation.judgment import Judgment

        generator = outlines.Generator(model, Judgment)
        # a synchronous generator returns the Judgment JSON text (the scorer validates it)
        judge = cls(lambda prompt: cast(str, generator(prompt)), **kw)
        judge.name = "llm-outlines"
        return judge
