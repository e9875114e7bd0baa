"""The OpenAI-compatible judge client against a local server on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from judge_server import FakeServer

from kg_rageval.families.judges import (
    AnswerCorrectness,
    BackendError,
    ChatClient,
    RubricJudge,
    parse_verdict,
    response_schema,
    score_judges,
)

SLEEPS: list[float] = []


def client(url: str, **kw) -> ChatClient:
    kw.setdefault("sleep", SLEEPS.append)
    kw.setdefault("backoff", 0.25)
    return ChatClient(url, "judge-model", **kw)


def test_structured_output_request_and_verdict():
    with FakeServer({"verdict": "correct", "score": 1.0}) as srv:
        c = client(srv.base_url)
        got = c.complete(
            "Is it right?", schema=response_schema(AnswerCorrectness), schema_name="answer_correctness"
        )
        body = srv.requests[0]
    assert body["model"] == "judge-model"
    assert body["messages"] == [{"role": "user", "content": "Is it right?"}]
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "answer_correctness"
    assert rf["json_schema"]["schema"]["properties"]["verdict"]["enum"] == [
        "correct",
        "partially_correct",
        "incorrect",
        "unscorable",
    ]
    assert body["temperature"] == 0.0
    v = parse_verdict(AnswerCorrectness, got.content)
    assert v.status == "scored" and v.label == "correct"
    assert (got.prompt_tokens, got.completion_tokens, got.cached, got.attempts) == (100, 20, False, 1)


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_with_exponential_backoff(status):
    SLEEPS.clear()
    with FakeServer() as srv:
        srv.script = [("status", status), ("status", status), ("content", '{"verdict": "correct"}')]
        c = client(srv.base_url, max_retries=3)
        got = c.complete("q")
        n = len(srv.requests)
    assert n == 3 and got.attempts == 3
    # 429 carries Retry-After: 0 (honoured); 5xx waits backoff * 2**k
    assert SLEEPS == ([0.0, 0.0] if status == 429 else [0.25, 0.5])
    u = c.usage()
    assert (u["http_calls"], u["retries"], u["failures"]) == (3, 2, 0)
    assert u["http_status"] == {str(status): 2, "200": 1}


def test_retries_exhausted_and_non_retryable():
    with FakeServer() as srv:
        srv.script = [("status", 503)] * 5
        c = client(srv.base_url, max_retries=2)
        with pytest.raises(BackendError, match=r"HTTP 503.*after 3 attempts") as ei:
            c.complete("q")
        assert ei.value.status == 503 and len(srv.requests) == 3
        srv.script = [("status", 400)]
        with pytest.raises(BackendError, match="HTTP 400"):
            c.complete("other")
        assert len(srv.requests) == 4  # a 400 is not retried
    assert c.usage()["failures"] == 2


@pytest.mark.slow
def test_timeout_is_retried_then_fails():
    with FakeServer() as srv:
        srv.script = [("delay", 2.5), ("content", '{"verdict": "incorrect", "wrong_facts": ["x"]}')]
        c = client(srv.base_url, timeout=1.0, max_retries=1)
        got = c.complete("q")
        assert got.attempts == 2 and json.loads(got.content)["verdict"] == "incorrect"
        srv.script = [("delay", 2.5), ("delay", 2.5)]
        with pytest.raises(BackendError, match="timed out after 1 s"):
            c.complete("q2")
    assert c.usage()["http_status"]["timeout"] == 3


def test_cache_hits_and_cost_totals(tmp_path):
    prices = {"prompt": 2.5, "completion": 10.0}  # USD per million tokens
    with FakeServer() as srv:
        c = client(srv.base_url, cache_dir=tmp_path, prices=prices)
        a = c.complete("same prompt", schema={"type": "object"})
        b = c.complete("same prompt", schema={"type": "object"})
        d = c.complete("same prompt", schema={"type": "object", "title": "other"})  # other schema: a miss
        n = len(srv.requests)
        c2 = client(srv.base_url, cache_dir=tmp_path, prices=prices)  # a new client reads the disk cache
        e = c2.complete("same prompt", schema={"type": "object"})
        assert len(srv.requests) == n
    assert n == 2 and not a.cached and b.cached and not d.cached and e.cached
    assert b.content == a.content and b.cost_usd == 0.0
    assert a.cost_usd == pytest.approx((100 * 2.5 + 20 * 10.0) / 1e6)
    u = c.usage()
    assert (u["requests"], u["cache_hits"], u["http_calls"]) == (3, 1, 2)
    assert (u["prompt_tokens"], u["completion_tokens"]) == (200, 40)
    assert u["cost_usd"] == pytest.approx(2 * 450 / 1e6)
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 2 and all(len(f.stem) == 64 and f.parent.name == f.stem[:2] for f in files)


def test_cache_key_covers_model_prompt_and_schema():
    c = ChatClient("http://127.0.0.1:1/v1", "m1")
    k = c.cache_key(c.body("p", {"type": "object"}))
    assert k != c.cache_key(c.body("p2", {"type": "object"}))
    assert k != c.cache_key(c.body("p", {"type": "string"}))
    assert k != c.cache_key(ChatClient("http://127.0.0.1:1/v1", "m2").body("p", {"type": "object"}))
    assert k == c.cache_key(c.body("p", {"type": "object"}))


def test_bounded_concurrency_keeps_order():
    with FakeServer("echo") as srv:
        srv.script = [("delay", 0.15)] * 8
        c = client(srv.base_url, concurrency=3)
        out = c.complete_many([f"q{i}" for i in range(8)])
        assert srv.max_active <= 3 and srv.max_active >= 2
    assert [o.content for o in out] == [f"q{i}" for i in range(8)]
    assert sorted(r["messages"][0]["content"] for r in srv.requests) == sorted(f"q{i}" for i in range(8))


def test_api_key_from_env_never_in_settings_or_cache(tmp_path, monkeypatch):
    secret = "sk-test-abcdef123456"
    monkeypatch.setenv("KGR_TEST_KEY", secret)
    with FakeServer() as srv:
        c = client(srv.base_url, api_key_env="KGR_TEST_KEY", cache_dir=tmp_path)
        c.complete("q")
        auth = srv.headers[0].get("Authorization")
    assert auth == f"Bearer {secret}"
    dump = json.dumps(c.settings()) + repr(c) + json.dumps(c.usage())
    assert secret not in dump and c.settings()["api_key"] == "***"
    assert all(secret not in f.read_text() for f in tmp_path.rglob("*.json"))
    assert not hasattr(c, "api_key")


def test_rubric_judge_entries_are_scored_like_file_entries():
    with FakeServer() as srv:
        srv.script = [
            ("content", '{"verdict": "correct", "score": 1}'),
            ("content", "not json at all"),
            ("status", 400),
        ]
        judge = RubricJudge(
            "answer_correctness", client(srv.base_url, max_retries=0, concurrency=1), name="j1"
        )
        items = [{"question": "q", "reference": "Paris", "answer": a} for a in ("Paris", "Lyon", "?")]
        entries = judge.judge_many(items)
        assert "REFERENCE:\nParis" in srv.requests[0]["messages"][0]["content"]
    assert [("output" in e, "error" in e) for e in entries] == [(True, False), (True, False), (False, True)]
    records = [
        {"id": f"r{i}", "judges": [dict(e, human=h)]}
        for i, (e, h) in enumerate(zip(entries, ["correct", "incorrect", "correct"]))
    ]
    ev = score_judges(None, records)["judge_calibration"]
    m = ev.metrics()
    assert (m["invalid_output_rate"].value, m["failed_call_rate"].value) == (
        pytest.approx(1 / 3),
        pytest.approx(1 / 3),
    )
    assert m["accuracy"].value == 1.0 and m["accuracy"].denominator == 1


def test_bad_settings():
    from kg_rageval.base.errors import ConfigError

    with pytest.raises(ConfigError, match="http"):
        ChatClient("file:///etc/passwd", "m")
    with pytest.raises(ConfigError, match="prices"):
        ChatClient("http://x/v1", "m", prices={"input": 1})


def test_audit_live_judge_usage_in_manifest(tmp_path, monkeypatch, vehicles):
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit

    monkeypatch.setenv("KGR_AUDIT_KEY", "sk-audit-secret-999")
    recs = [
        {
            "id": f"r{i}",
            "query": f"q{i}",
            "answer": {"text": "Paris"},
            "reference": {"answer": "Paris"},
            "judges": [],
        }
        for i in range(3)
    ]  # distinct prompts: no cache hit among them
    with FakeServer({"verdict": "correct", "score": 1.0}) as srv:
        cfg = config_from_mapping(
            {
                "ontology": "x.csv",
                "records": "r.jsonl",
                "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
                "gates": ["judge.judge_approval_rate >= 0.9"],
                "families": {
                    "judge": {
                        "endpoint": srv.base_url,
                        "model": "m",
                        "rubrics": ["answer_correctness"],
                        "api_key_env": "KGR_AUDIT_KEY",
                        "price_prompt": 1.0,
                        "cache_dir": str(tmp_path / "cache"),
                    }
                },
            },
            base_dir=tmp_path,
        )
        res = run_audit(cfg, progress=False, inputs={"ontology": vehicles, "records": recs, "paths": {}})
    assert res.passed
    fam = res.manifest["families"]["judge"]
    assert fam["judge_usage"]["usage"]["requests"] == 3
    assert fam["judge_usage"]["usage"]["cost_usd"] == pytest.approx(300 / 1e6)
    assert fam["judge_usage"]["settings"]["api_key"] == "***"
    assert "sk-audit-secret-999" not in json.dumps(res.manifest)


def test_identical_requests_in_a_batch_are_sent_once():
    with FakeServer("echo") as srv:
        c = client(srv.base_url, concurrency=4, prices={"prompt": 1.0, "completion": 1.0})
        out = c.complete_many(["a", "b", "a", "a"])
        n = len(srv.requests)
    assert n == 2 and [o.content for o in out] == ["a", "b", "a", "a"]
    assert [o.cached for o in out] == [False, False, True, True]
    u = c.usage()
    assert (u["requests"], u["cache_hits"], u["http_calls"]) == (4, 2, 2)
    assert u["cost_usd"] == pytest.approx(2 * 120 / 1e6)


def test_a_response_without_content_is_a_counted_failure():
    with FakeServer() as srv:
        c = client(srv.base_url)
        srv.script = [("raw", {"choices": []}), ("raw", {"choices": [{"message": {"content": None}}]})]
        with pytest.raises(BackendError, match="no choices"):
            c.complete("q1")
        with pytest.raises(BackendError, match="content is NoneType"):
            c.complete("q2")
    assert c.usage()["failures"] == 2 and c.usage()["http_calls"] == 2


def test_credentials_in_the_url_are_masked():
    c = ChatClient("https://user:hunter2@llm.example/v1?api_key=sk-zzz", "m")
    text = json.dumps(c.settings()) + repr(c)
    assert "hunter2" not in text and "sk-zzz" not in text
    with FakeServer() as srv:
        host = srv.base_url.replace("http://", "http://u:pw-secret@")
        c2 = client(host + "?api_key=sk-zzz", max_retries=0)
        srv.script = [("status", 400)]
        with pytest.raises(BackendError) as ei:
            c2.complete("q")
    assert "pw-secret" not in str(ei.value) and "sk-zzz" not in str(ei.value)


# --------------------------------------------------------------- credentials, deadline, signed cache
SECRET = "sk-test-0123456789abcdef"


def test_a_redirect_to_another_host_is_refused_and_the_key_never_leaves(monkeypatch):
    monkeypatch.setenv("KGR_TEST_KEY", SECRET)
    with FakeServer() as other, FakeServer() as srv:
        srv.script = [("redirect", other.base_url + "/chat/completions")]
        c = client(srv.base_url, api_key_env="KGR_TEST_KEY", max_retries=3)
        with pytest.raises(BackendError, match=r"HTTP 302 redirect to http://127\.0\.0\.1:\d+ refused") as ei:
            c.complete("q")
    assert other.requests == [] and other.headers == []  # the other origin got nothing, let alone the key
    assert len(srv.requests) == 1 and ei.value.status == 302  # not retried
    assert SECRET not in str(ei.value) and c.usage()["failures"] == 1


def test_the_timeout_bounds_the_whole_request_against_a_trickling_server():
    import time as _time

    with FakeServer() as srv:
        srv.script = [("trickle", 6.0)]
        c = client(srv.base_url, timeout=1.0, max_retries=0)
        t0 = _time.monotonic()
        with pytest.raises(BackendError, match=r"timed out after 1 s"):
            c.complete("q")
        took = _time.monotonic() - t0
    assert took < 3.0, took  # each byte arrives well within 1 s; only a whole-request deadline stops it
    assert c.usage()["http_status"] == {"200": 1, "timeout": 1}  # the headers came; the body never did


def test_an_echoed_key_is_masked_in_answers_errors_and_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KGR_TEST_KEY", SECRET)
    with FakeServer() as srv:
        srv.script = [("echo_header", "Authorization"), ("error_echo_header", "Authorization")]
        c = client(srv.base_url, api_key_env="KGR_TEST_KEY", cache_dir=tmp_path, max_retries=0)
        got = c.complete("q")
        with pytest.raises(BackendError) as ei:
            c.complete("q2")
    assert json.loads(got.content)["rationale"] == "you sent Bearer ***"
    assert SECRET not in str(ei.value) and "bad key Bearer ***" in str(ei.value)
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1 and SECRET not in files[0].read_text()


def _cached_once(tmp_path, srv):
    c = client(srv.base_url, cache_dir=tmp_path)
    first = c.complete("q")
    (entry,) = list(tmp_path.rglob("*.json"))
    return first, entry


def test_an_edited_cache_entry_is_asked_again_never_trusted(tmp_path):
    with FakeServer({"verdict": "incorrect"}) as srv:
        first, entry = _cached_once(tmp_path, srv)
        data = json.loads(entry.read_text())
        data["content"] = json.dumps({"verdict": "correct"})  # a FAIL edited into a PASS
        entry.write_text(json.dumps(data))
        c = client(srv.base_url, cache_dir=tmp_path)
        again = c.complete("q")
        hit = c.complete("q")  # the re-asked answer is cached, signed, and trusted
    assert json.loads(first.content)["verdict"] == "incorrect"
    assert json.loads(again.content)["verdict"] == "incorrect" and not again.cached and hit.cached
    u = c.usage()
    assert (u["http_calls"], u["cache_rejected"], u["cache_hits"]) == (1, 1, 1)
    assert len(srv.requests) == 2


def test_a_cache_entry_copied_to_another_request_or_unsigned_is_refused(tmp_path, monkeypatch):
    with FakeServer() as srv:
        _, entry = _cached_once(tmp_path, srv)
        c = client(srv.base_url, cache_dir=tmp_path)
        other_key = c.cache_key(c.body("another prompt"))
        target = tmp_path / other_key[:2] / f"{other_key}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(entry.read_text())  # a genuine entry under another request's name
        c.complete("another prompt")
        legacy = json.loads(entry.read_text())
        for k in ("mac", "mac_key", "request"):
            legacy.pop(k)
        entry.write_text(json.dumps(legacy))  # an entry written before entries were signed
        c.complete("q")
        monkeypatch.setenv("KG_RAGEVAL_CACHE_KEY", "another machine's key")
        c.complete("q")  # signed under this machine's old key: another machine does not trust it
    assert c.usage()["cache_rejected"] == 3 and c.usage()["cache_hits"] == 0 and c.usage()["http_calls"] == 3
