"""`encoding.Encoded`: a document holding already-encoded members is the same text as encoding it whole.

The reference is the standard library's encoder on plain copies (NaN and inf written as null first), not
`to_json` itself."""

from __future__ import annotations

import json
import math
import os
import random

from ioweather.encoding import Encoded, to_json

SEED = int(os.environ.get("TEST_SEED", random.randrange(2**32)))


def _value(rng: random.Random, depth: int):
    kinds = ["int", "float", "str", "none", "bool"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randrange(-10**12, 10**12)
    if kind == "float":
        return rng.choice([rng.uniform(-1e6, 1e6), float("nan"), float("inf"), -0.0, 1e-300])
    if kind == "str":
        return "".join(rng.choice("aé<>&'\"\\\n\u2028✓") for _ in range(rng.randrange(6)))
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_key(rng): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _key(rng: random.Random) -> str:
    return "".join(rng.choice("abé<\"") for _ in range(rng.randrange(1, 4)))


def _plain(o):
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_plain(v) for v in o]
    return o


def test_documents_with_encoded_members_are_the_same_text():
    print(f"seed {SEED}")
    rng = random.Random(SEED)
    spliced = 0
    for _ in range(400):
        doc = {}
        for _ in range(rng.randrange(1, 6)):
            v = _value(rng, 1)
            if isinstance(v, dict) and rng.random() < 0.7:
                v = Encoded(v)
            elif isinstance(v, list) and rng.random() < 0.5:  # a list of them: each spliced in
                v = [Encoded(x if isinstance(x, dict) else {"v": x}) for x in v]
            doc[_key(rng)] = v
        spliced += any(isinstance(v, Encoded) or (isinstance(v, list) and v and isinstance(v[0], Encoded))
                       for v in doc.values())
        want = json.dumps(_plain(doc), ensure_ascii=False)
        assert to_json(doc) == want, doc
        # anywhere but at the top it is a plain dict
        assert to_json([doc]) == f"[{want}]"
    assert spliced > 100


def test_an_encoded_member_is_its_own_text():
    # the text is taken as kept: a member changed after it was encoded is not read again (what the callers rely
    # on: they keep one only for a part that does not change)
    e = Encoded({"a": [1, 2]})
    e["a"].append(3)
    assert to_json({"x": e, "y": 1}) == '{"x": {"a": [1, 2]}, "y": 1}'
    assert to_json({}) == "{}"
    assert to_json({"x": Encoded({})}) == '{"x": {}}'
