"""The RAGAS and DeepEval readers on files the packages themselves write (issue #32: "the tests
build their inputs with the packages themselves"). Neither package is an extra of kg-rageval
(each pulls an LLM framework); each test skips with a reason where its package is absent.
Checked with ragas 0.4.3 (langchain-community < 0.4) and deepeval 4.3.1."""

from __future__ import annotations

import json

import pytest

from kg_rageval.interop.formats import read


def _ragas():
    try:
        import ragas  # noqa: F401
    except Exception as exc:  # absent, or an LLM dependency of ragas that does not import
        pytest.skip(f"ragas is not importable: {exc}")
    from ragas import EvaluationDataset, MultiTurnSample, SingleTurnSample
    from ragas.messages import AIMessage, HumanMessage

    return EvaluationDataset, SingleTurnSample, MultiTurnSample, HumanMessage, AIMessage


def test_ragas_files_written_by_ragas(tmp_path):
    EvaluationDataset, SingleTurnSample, MultiTurnSample, HumanMessage, AIMessage = _ragas()
    single = [
        SingleTurnSample(
            user_input="Which technique covers dumping LSASS memory?",
            retrieved_contexts=["T1003.001 LSASS Memory.", "T1003 OS Credential Dumping."],
            response="LSASS Memory (T1003.001).",
            reference="LSASS Memory",
            reference_contexts=["T1003.001 LSASS Memory."],
        ),
        SingleTurnSample(user_input="What is T1566?", response="Phishing."),
    ]
    ds = EvaluationDataset(samples=single)
    ds.to_jsonl(str(tmp_path / "r.jsonl"))
    ds.to_csv(str(tmp_path / "r.csv"))
    for path in (tmp_path / "r.jsonl", tmp_path / "r.csv"):
        got = read("ragas", path)
        first, second = got.records
        assert first["query"] == "Which technique covers dumping LSASS memory?", path
        assert first["retrieval"] == {"contexts": ["T1003.001 LSASS Memory.", "T1003 OS Credential Dumping."]}
        assert first["answer"] == {"text": "LSASS Memory (T1003.001)."}
        assert first["reference"] == {"answer": "LSASS Memory"}
        assert first["source"]["extra"] == {"reference_contexts": ["T1003.001 LSASS Memory."]}
        assert "retrieval" not in second and "reference" not in second  # never invented
        assert got.missing == {
            "id": 2,
            "query": 0,
            "retrieval.contexts": 1,
            "answer.text": 0,
            "reference.answer": 1,
        }, path
    conv = [
        HumanMessage(content="Hi, I need T1003."),
        AIMessage(content="Which sub-technique?"),
        HumanMessage(content="The LSASS one."),
        AIMessage(content="T1003.001."),
    ]
    EvaluationDataset(samples=[MultiTurnSample(user_input=conv, reference="T1003.001")]).to_jsonl(
        str(tmp_path / "m.jsonl")
    )
    (rec,) = read("ragas", tmp_path / "m.jsonl").records
    assert rec["query"] == "The LSASS one." and rec["answer"] == {"text": "T1003.001."}
    assert [m["content"] for m in rec["source"]["extra"]["user_input"]] == [m.content for m in conv]


def test_deepeval_files_written_by_deepeval(tmp_path):
    try:
        from deepeval.dataset import EvaluationDataset, Golden
    except Exception as exc:
        pytest.skip(f"deepeval is not importable: {exc}")
    goldens = [
        Golden(
            input="What is phishing?",
            actual_output="Sending deceptive messages.",
            expected_output="Phishing (T1566)",
            retrieval_context=["T1566 Phishing"],
            context=["T1566 is Phishing."],
        ),
        Golden(input="What is T1003?", expected_output="OS Credential Dumping"),
    ]
    ds = EvaluationDataset(goldens=goldens)
    for file_type in ("json", "jsonl", "csv"):
        path = ds.save_as(file_type=file_type, directory=str(tmp_path), file_name=f"goldens_{file_type}")
        got = read("deepeval", path)
        first, second = got.records
        assert first["query"] == "What is phishing?", file_type
        assert first["answer"] == {"text": "Sending deceptive messages."}, file_type
        assert first["reference"] == {"answer": "Phishing (T1566)"}, file_type
        assert first["retrieval"] == {"contexts": ["T1566 Phishing"]}, file_type
        assert first["source"]["extra"]["context"] == ["T1566 is Phishing."], file_type
        assert "answer" not in second and "retrieval" not in second, file_type
        assert got.missing["answer.text"] == 1 and got.missing["retrieval.contexts"] == 1, file_type
        assert got.missing["query"] == 0 and got.missing["reference.answer"] == 0, file_type
    assert (
        json.loads((tmp_path / "goldens_json.json").read_text(encoding="utf-8"))[0]["input"]
        == "What is phishing?"
    )
