"""The freshness gate: what it ignores (times, progress bars, addresses, chart ids, commits)
and what it catches (a changed number, a missing cell output, an error)."""

import copy

from layerlab.book import outputs


def _nb(*cells):
    return {"cells": [{"cell_type": "code", "source": src, "outputs": outs}
                      for src, outs in cells]}


def _text(t):
    return {"output_type": "execute_result", "data": {"text/plain": t}, "metadata": {},
            "execution_count": 1}


BASE = _nb(
    ("x = run()", [{"output_type": "stream", "name": "stderr",
                    "text": "models: 100%|##########| 2/2 [00:03<00:00,  1.5s/it]"}]),
    ("table", [_text("deg  +3,422 %\nL11  critical")]),
    ("chart", [{"output_type": "display_data", "metadata": {},
                "data": {"text/html": '<div id="altair-viz-5e1f0c2a9b"></div>'}}]),
    ("provenance", [_text("git_commit  4fb8ef0a1b2c\ndate_utc  2026-11-30 02:32:54\n"
                          "<object at 0x7f3a2b1c9d80> took 12.5 s")]),
)


def test_volatile_parts_are_ignored():
    fresh = copy.deepcopy(BASE)
    fresh["cells"][0]["outputs"] = []  # no progress bar when everything is cached
    fresh["cells"][2]["outputs"][0]["data"]["text/html"] = '<div id="altair-viz-0d9c8b"></div>'
    fresh["cells"][3]["outputs"] = [_text("git_commit  9a8b7c6d5e4f+dirty\ndate_utc  2026-12-01 "
                                          "10:00:00\n<object at 0x55aa11bb22cc> took 3 s")]
    assert outputs.differences(BASE, fresh) == []


def test_a_changed_number_is_caught():
    fresh = copy.deepcopy(BASE)
    fresh["cells"][1]["outputs"] = [_text("deg  +3,423 %\nL11  critical")]
    found = outputs.differences(BASE, fresh)
    assert len(found) == 1 and "+3,423 %" in found[0] and "code cell 2" in found[0]


def test_missing_output_error_and_changed_code_are_caught():
    fresh = copy.deepcopy(BASE)
    fresh["cells"][1]["outputs"] = []
    assert outputs.differences(BASE, fresh)
    fresh["cells"][1]["outputs"] = [{"output_type": "error", "ename": "LookupError",
                                     "evalue": "not cached", "traceback": []}]
    assert "LookupError" in outputs.differences(BASE, fresh)[0]
    fresh = copy.deepcopy(BASE)
    fresh["cells"][1]["source"] = "table2"
    assert "make sync" in outputs.differences(BASE, fresh)[0]


def test_last_bit_float_noise_is_ignored_but_a_printed_digit_is_not():
    chart = '{"data": {"name": "data-%s"}, "datasets": {"error": %s}}'
    a = _nb(("chart", [_text(chart % ("a" * 32, "0.18318423698402692"))]))
    b = _nb(("chart", [_text(chart % ("b" * 32, "0.18318423698402547"))]))  # another CPU
    assert outputs.differences(a, b) == []
    c = _nb(("chart", [_text(chart % ("c" * 32, "0.18318523698402547"))]))  # a real change
    assert outputs.differences(a, c)
    assert outputs.differences(_nb(("t", [_text("α 1.2015")])), _nb(("t", [_text("α 1.2016")])))
    assert outputs.differences(_nb(("t", [_text("L11 core")])), _nb(("t", [_text("L12 core")])))


def test_only_the_provenance_commit_is_masked():
    out = outputs.normalise([_text("git_commit  4fb8ef0a1b2c+dirty\nratio 0.184318423698")])
    assert "COMMIT" in out[0] and "0.184318423698" in out[0]
    html = outputs.normalise([{"output_type": "display_data", "metadata": {}, "data": {
        "text/html": "<th>git_commit</th>\n      <td>66d043d1a2b3</td>"}}])
    assert "66d043d" not in html[0]


def _out(t):
    return {"output_type": "stream", "name": "stdout", "text": t}


def test_one_print_flushed_in_two_writes_equals_one_write():
    """The kernel flushes stdout on a timer: under load one print arrives as its text and then
    its newline (CI saw it on chapter 01); consecutive writes to one stream compare as one."""
    one = _nb(("t", [_out("39 shapes\n")]))
    two = _nb(("t", [_out("39 shapes"), _out("\n")]))
    assert outputs.differences(one, two) == []
    chart_between = _nb(("t", [_out("39 shapes"), {"output_type": "display_data", "metadata": {},
                                                     "data": {"text/plain": "<chart>"}},
                               _out("\n")]))
    assert outputs.differences(one, chart_between)  # text on the other side of a chart differs
