"""The generation path: Outlines constrained by a derived schema drives a tiny in-process model.

The model is a randomly initialised 1-layer GPT-2 (16-dim) over a 96-token character
vocabulary built in memory: nothing is downloaded. Whatever the random weights prefer, the
constrained output must parse and validate against the derived schema."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # imports torch/transformers (~5-30 s on a loaded machine)


def test_outlines_generation_conforms(monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import outlines
    import torch
    from conformance_helpers import TECHNIQUES, build_attack_like
    from tokenizers import Tokenizer, decoders, models
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from kg_rageval.families.conformance import check_schema, derive_schema, parse_spec, score_conformance
    from kg_rageval.families.conformance.outlines_backend import output_type

    vocab = {chr(c): i for i, c in enumerate(range(32, 127))}
    vocab["<eos>"] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=None))
    tok.decoder = decoders.Fuse()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<eos>")
    assert hf.decode(hf.encode('{"a": 1}')) == '{"a": 1}'
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=128,
        n_embd=16,
        n_layer=1,
        n_head=1,
        eos_token_id=vocab["<eos>"],
        bos_token_id=vocab["<eos>"],
    )
    model = outlines.from_transformers(GPT2LMHeadModel(config), hf)

    attack = build_attack_like()
    derived = derive_schema(
        attack,
        parse_spec(
            {
                "fields": {
                    "technique": {"within": "attack-pattern", "node_type": "technique", "required": True},
                    "tactic": {"node_type": "tactic", "required": True},
                }
            }
        ),
    )
    generator = outlines.Generator(model, output_type(derived))
    outputs = [generator("Which ATT&CK technique dumps LSASS memory?", max_new_tokens=80) for _ in range(3)]
    for out in outputs:
        _, failures = check_schema(derived, out)
        assert failures == [], out
    ev = score_conformance(
        attack, [{"id": str(i), "answer": {"output": o}} for i, o in enumerate(outputs)], derived
    )
    assert ev.metrics()["schema_validity"].value == 1.0
    assert ev.metrics()["status_conformance"].value == 1.0
    assert all(r["problems"] is None for r in ev.rows())
    assert set(TECHNIQUES) >= {json.loads(o)["technique"] for o in outputs}
