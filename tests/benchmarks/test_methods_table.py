"""The README's methods table: rows in the page's order, each compiled row after its eager one and compared
with plain decoding on its own engine."""

from specdec.benchmarks.methods_table import EAGLE3_TREE, methods_table


def entry(speed: float, by_task: dict[str, float]) -> dict:
    """A summary entry: ``speed`` × our plain on its engine, ``by_task`` × HF plain."""
    return {
        "speedup_vs_ours_plain": speed,
        "speedup_vs_ours_plain_ci95": [speed - 0.1, speed + 0.1],
        "speedup_vs_hf_plain": by_task["qa"],
        "by_task": by_task,
    }


def test_compiled_rows_follow_their_eager_rows_and_divide_by_compiled_plain():
    tree = f"ours-sps[{EAGLE3_TREE}]"
    report = {
        "summary": {
            "ours-plain": entry(1.0, {"qa": 1.5, "math_reasoning": 1.5}),
            "ours-plain[fast]": entry(1.0, {"qa": 2.0, "math_reasoning": 1.6}),
            tree: entry(1.4, {"qa": 3.0, "math_reasoning": 2.4}),
            f"{tree[:-1]}, fast]": entry(1.6, {"qa": 4.0, "math_reasoning": 2.4}),
        }
    }
    lines = methods_table(report).splitlines()
    assert lines[0].endswith("| × HF generate | QA | math |")
    names = [line.split(" | ")[0].removeprefix("| ") for line in lines[2:]]
    assert names == [
        "plain decoding",
        "plain decoding, compiled",
        "EAGLE-3 head, top-2 tree",
        "EAGLE-3 head, top-2 tree, compiled",
    ]
    compiled_tree = lines[5].split(" | ")
    assert compiled_tree[1] == f"`--drafter {EAGLE3_TREE}` `--compile`"
    assert compiled_tree[3:] == ["1.60× [1.50, 1.70]", "4.00×", "2.00×", "1.50× |"]  # 4.0 / 2.0, 2.4 / 1.6
    assert lines[4].split(" | ")[5:] == ["2.00×", "1.60× |"]  # eager: 3.0 / 1.5, 2.4 / 1.5
