"""What the compile rule selects when inductor or dynamo change."""


def test_compile_roundtrip():
    code = compile("x * 2", "<demo>", "eval")
    assert eval(code, {"x": 21}) == 42
