"""A faithfulness judge named by a string: the one place the CLI (``--judge``), the audit
config (``families: {generation: {judge: ...}}``) and the library resolve judge names.

Names:

* ``none`` (or ``None``): no judge; records without a judgment stay unscored (``no judgment``);
* ``ontology``: ``ExtractVerifyJudge(OntologyVerifier(ontology))`` (deterministic);
* ``nli``: ``ExtractVerifyJudge(NLIVerifier(nli_model))``, ``nli_model`` a local
  cross-encoder directory (never downloaded);
* ``"module:callable"``: a plugin. A class is instantiated (with ``ontology=`` when its
  constructor takes that parameter); any other callable is the judge itself,
  ``judge(answer, contexts) -> Judgment | dict | str``.

Anything else is a :class:`~kg_rageval.base.errors.ConfigError` naming the key (``judge: ...``;
the audit prefixes ``families.generation.``), never a later ``TypeError`` reported as missing
evidence.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.imports import import_target

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.generation.verifiers import Judge
    from kg_rageval.ontology import Ontology

JUDGE_NAMES = ("none", "ontology", "nli")
_PLUGIN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def resolve_judge(
    judge: Any, ontology: Ontology, *, nli_model: str | None = None, key: str = "judge"
) -> Judge | None:
    """The judge object that ``judge`` names (see the module docstring); a callable is
    returned unchanged."""
    if judge is None or judge == "none":
        return None
    if callable(judge) and not isinstance(judge, str):
        return judge
    from kg_rageval.families.generation.verifiers import ExtractVerifyJudge, NLIVerifier, OntologyVerifier

    if judge == "ontology":
        return ExtractVerifyJudge(OntologyVerifier(ontology))
    if judge == "nli":
        if not nli_model:
            raise ConfigError(f"{key}: 'nli' needs nli_model (a local cross-encoder directory)")
        return ExtractVerifyJudge(NLIVerifier(nli_model))
    if not isinstance(judge, str) or not _PLUGIN.match(judge):
        raise ConfigError(
            f"{key}: unknown judge {judge!r}; use one of {', '.join(JUDGE_NAMES)} "
            "or a plugin 'module:callable'"
        )
    module, _, attr = judge.partition(":")
    obj: Any
    try:
        obj = import_target(judge)
    except ImportError as exc:
        raise ConfigError(f"{key}: judge plugin {judge!r}: cannot import {module!r} ({exc})") from None
    except AttributeError:
        raise ConfigError(f"{key}: judge plugin {judge!r}: {module!r} has no attribute {attr!r}") from None
    if inspect.isclass(obj):
        cls: Any = obj
        try:
            takes = "ontology" in inspect.signature(cls).parameters
        except (TypeError, ValueError):
            takes = False
        obj = cls(ontology=ontology) if takes else cls()
    if not callable(obj):
        raise ConfigError(f"{key}: judge plugin {judge!r} is not callable ({type(obj).__name__})")
    return obj
