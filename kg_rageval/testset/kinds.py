"""Case kinds, their default intents and their deterministic query templates.

Each kind exists on purpose (what it tests, and what its gold is — checked through the
ontology in ``tests/testset/test_testset.py``):

========================  =================================================================
kind                      gold
========================  =================================================================
``label_lookup``          the concept; its documents
``synonym_lookup``        the concept (the query names a synonym); its documents
``definition_lookup``     the concept (the query is its definition, own label removed)
``sibling_contrast``      the first concept; the second (``testset.partner``) is a sibling —
                          a plausible near miss; its documents are relevant at a lower grade
``generalisation``        the concept's direct parents (``labels.gold``) and their documents
``specialisation``        the concept's direct children and their documents
``counterfactual``        pairs sharing a session: the original concept, and the query with
                          the concept swapped for a sibling or cousin — the gold moves with it
``distractor``            the concept's documents; ``testset.distractors`` lists documents
                          about a near-miss concept (sibling, else cousin) that must not be
                          retrieved
``nil_probe``             NIL: the concept is held out of a copy of the ontology
                          (``ontology-heldout.kgro``); ``mentions.gold[].nearest`` and
                          ``testset.nearest`` name the nearest concept still in the copy
``negation``              "not": the concept's siblings under a named parent
``quantifier``            "except" (siblings), "only" (documents about the concept alone),
                          "all" (every descendant)
``out_of_scope``          no answer in the corpus: a concept without documents, or an
                          off-topic question; not answerable
``multi_hop``             two documents: one about the concept, one about its parent
========================  =================================================================
"""

from __future__ import annotations

import re
import string

KINDS = (
    "label_lookup",
    "synonym_lookup",
    "definition_lookup",
    "sibling_contrast",
    "generalisation",
    "specialisation",
    "counterfactual",
    "distractor",
    "nil_probe",
    "negation",
    "quantifier",
    "out_of_scope",
    "multi_hop",
)

DEFAULT_COUNTS = {
    "label_lookup": 80,
    "synonym_lookup": 40,
    "definition_lookup": 50,
    "sibling_contrast": 40,
    "generalisation": 30,
    "specialisation": 30,
    "counterfactual": 40,
    "distractor": 30,
    "nil_probe": 20,
    "negation": 30,
    "quantifier": 45,
    "out_of_scope": 30,
    "multi_hop": 35,
}
"""500 cases."""

DEFAULT_INTENTS = {k: k for k in KINDS} | {"definition_lookup": "description", "nil_probe": "unknown_concept"}
"""Intent slice value per kind (the demo's intent names for the lookups it always had)."""

TEMPLATES = {
    "label_lookup": "What is {label}?",
    "synonym_lookup": "What is {synonym}?",
    "definition_lookup": "Which {noun} is {description}?",
    "sibling_contrast": "How does {label} differ from {partner}?",
    "generalisation": "What broader kind of {noun} is {label}?",
    "specialisation": "Name a more specific kind of {label}.",
    "counterfactual": "Which documents describe {label}?",
    "distractor": "Find the documents about {label}.",
    "nil_probe": "What is {label}?",
    "negation": "Which {noun} under {parent} is not {label}?",
    "quantifier:except": "List every {noun} under {parent} except {label}.",
    "quantifier:only": "Which documents are only about {label}?",
    "quantifier:all": "List all kinds of {label}.",
    "out_of_scope": "What is {label}?",
    "multi_hop": "What is the parent category of {label}, and how is that category defined?",
}
"""Deterministic templates (``{slot}`` placeholders; concept slots become gold mentions)."""

OFF_TOPIC = (
    "What is the capital of Australia?",
    "Who won the 1998 football world cup?",
    "How do I bake sourdough bread?",
    "What is the boiling point of ethanol at sea level?",
    "Which planet has the most moons?",
    "How many strings does a cello have?",
    "What is the exchange rate between the euro and the yen today?",
    "Who painted The Night Watch?",
    "How long does it take to walk from Utrecht to Amsterdam?",
    "What is the plot of Moby-Dick?",
    "Which year did the Berlin Wall fall?",
    "How do I reset my router password?",
    "What is a good recipe for pea soup?",
    "How tall is the Eiffel Tower?",
    "Who wrote the Goldberg Variations?",
    "What is the speed of sound in water?",
)
"""Built-in questions with no answer in an ontology-derived corpus."""


def fill(template: str, slots: dict[str, str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """Format ``template`` and return the text with the ``(start, end)`` span of every slot."""
    out: list[str] = []
    spans: dict[str, tuple[int, int]] = {}
    pos = 0
    for literal, name, _spec, _conv in string.Formatter().parse(template):
        out.append(literal)
        pos += len(literal)
        if name is not None:
            value = slots[name]
            spans.setdefault(name, (pos, pos + len(value)))
            out.append(value)
            pos += len(value)
    return "".join(out), spans


_CITATION = re.compile(r"\(Citation:[^)]*\)")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MDLINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def clean_text(text: str) -> str:
    """Definition text as prose: ATT&CK's ``(Citation: ...)`` markers, HTML tags and Markdown
    links removed, whitespace collapsed."""
    text = _MDLINK.sub(r"\1", _TAG.sub("", _CITATION.sub("", text)))
    return re.sub(r"\s+", " ", text).strip()


def first_sentence(text: str) -> str:
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z])", text)
    return text[: m.start()] if m else text


def strip_label(definition: str, label: str, noun: str = "concept") -> str:
    """The definition with the concept's own label replaced by "this <noun>", lower-cased
    first letter, leading article and final full stop removed."""
    text = re.sub(re.escape(label), f"this {noun}", definition, flags=re.IGNORECASE)
    text = text[0].lower() + text[1:] if text else text
    return re.sub(r"^an?\s+", "", text).rstrip(".")


def describe(definition: str, label: str, noun: str) -> str:
    """The ``{description}`` slot of a definition lookup."""
    return strip_label(first_sentence(clean_text(definition)), label, noun)
