"""Rubric judges behind a chat-completions client: prompt → structured output → verdict.

:class:`RubricJudge` fills the rubric's prompt template with an item's fields, asks the client
for output constrained to the verdict's JSON schema, and returns a ``judges`` entry for the
record (``docs/judges.md``)::

    {"rubric": ..., "judge": <name>, "output": <raw text>, "order": "AB"}      # or
    {"rubric": ..., "judge": <name>, "error": "timed out after 60 s ..."}      # a failed call

The output is *not* validated here: the scorer validates every entry the same way, so output
from a file, a human tool or this judge is counted alike (invalid / unscorable / failed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kg_rageval.families.judges.client import BackendError, ChatClient
from kg_rageval.families.judges.contracts import response_schema, rubric

PROMPTS: dict[str, str] = {
    "pairwise": (
        "You compare two answers to the same question. Decide which answer is better: more "
        "correct, more complete and better supported. Ignore length and style.\n"
        'Reply with one JSON object: {{"verdict": "A" | "B" | "tie" | "unscorable", '
        '"confidence": 0..1, "rationale": "..."}}.\n\nQUESTION:\n{question}\n\n'
        "ANSWER A:\n{answer_a}\n\nANSWER B:\n{answer_b}\n"
    ),
    "citation_support": (
        'Does the PASSAGE support the CLAIM? Quote the supporting text exactly as "evidence".\n'
        'Reply with one JSON object: {{"verdict": "supported" | "partially_supported" | '
        '"not_supported" | "unscorable", "claim": the claim, "citation": "{citation}", '
        '"evidence": quote or null, "rationale": "..."}}.\n\nCLAIM:\n{claim}\n\n'
        "PASSAGE [{citation}]:\n{passage}\n"
    ),
    "refusal": (
        "Decide whether the system behaved correctly: it should answer when the CONTEXT answers "
        "the QUESTION and refuse when it does not.\nReply with one JSON object: "
        '{{"answerable": true | false, "refused": true | false, "verdict": "correct" | '
        '"incorrect" | "unscorable", "rationale": "..."}}; the verdict is "correct" '
        "exactly when refused == not answerable.\n\nQUESTION:\n{question}\n\nCONTEXT:\n{context}\n\n"
        "ANSWER:\n{answer}\n"
    ),
    "answer_correctness": (
        "Judge the ANSWER against the REFERENCE answer. List reference facts the answer lacks "
        "(missing_facts) and answer facts the reference contradicts (wrong_facts).\n"
        'Reply with one JSON object: {{"verdict": "correct" | "partially_correct" | '
        '"incorrect" | "unscorable", "score": 0..1, "missing_facts": [...], '
        '"wrong_facts": [...], "rationale": "..."}}.\n\nQUESTION:\n{question}\n\n'
        "REFERENCE:\n{reference}\n\nANSWER:\n{answer}\n"
    ),
    "nugget_support": (
        "Decide whether the ANSWER supports the NUGGET, an atomic fact a good answer to the "
        "QUESTION contains: support (the answer states the whole nugget), partial_support (part "
        "of it) or not_support.\n"
        'Reply with one JSON object: {{"verdict": "support" | "partial_support" | "not_support" '
        '| "unscorable", "nugget": the nugget, "rationale": "..."}}.\n\nQUESTION:\n{question}\n\n'
        "NUGGET:\n{nugget}\n\nANSWER:\n{answer}\n"
    ),
}


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return "(none)"


class RubricJudge:
    """An LLM judge for one rubric. ``name`` identifies the judge in records and reports
    (default: the client's model)."""

    def __init__(
        self,
        rubric_name: str,
        client: ChatClient,
        *,
        name: str | None = None,
        prompt_template: str | None = None,
        system: str | None = None,
    ):
        self.schema = rubric(rubric_name)
        self.rubric = rubric_name
        self.client = client
        self.name = name or client.model
        self.template = prompt_template or PROMPTS[rubric_name]
        self.system = system

    def prompt(self, item: Mapping[str, Any]) -> str:
        """The template filled with the item's fields (absent ones as ``(none)``)."""
        return self.template.format_map(_Blank({k: "" if v is None else v for k, v in item.items()}))

    def messages(self, item: Mapping[str, Any]) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return msgs + [{"role": "user", "content": self.prompt(item)}]

    def judge_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """One ``judges`` entry per item (``order`` copied from the item when it has one)."""
        results = self.client.complete_many(
            [self.messages(i) for i in items], schema=response_schema(self.schema), schema_name=self.rubric
        )
        out = []
        for item, res in zip(items, results):
            entry: dict[str, Any] = {"rubric": self.rubric, "judge": self.name}
            for k in ("order", "pair", "citation"):
                if item.get(k) is not None:
                    entry[k] = item[k]
            if isinstance(res, BackendError):
                entry["error"] = str(res)
            else:
                entry["output"] = res.content
            out.append(entry)
        return out
