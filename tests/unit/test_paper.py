"""The papers' numbers have one home (layerlab.paper), each with its source."""

import re
from pathlib import Path

from layerlab import paper

SRC = Path(paper.__file__).parent


def test_every_reported_value_names_its_source():
    reported = {k: v for k, v in vars(paper).items() if isinstance(v, paper.Reported)}
    assert len(reported) >= 20
    for name, r in reported.items():
        assert name.startswith(("P1_", "P2_")) and len(r.source) > 10, name


def _code_without_strings(path) -> str:
    import io
    import tokenize

    toks = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return " ".join(t.string for t in toks if t.type not in (tokenize.STRING, tokenize.COMMENT))


def test_no_module_types_a_paper_number_itself():
    # distinctive values only: small integers and 0.5-like constants are too common to police
    literals = ["63_419", "63419", "0.91", "26.22", "22.60", "0.127", "0.599", "0.996", "1.2014",
                "0.2685", "(8, 11)", "(14, 17)", "(8, 9, 10, 11)"]
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.name == "paper.py":
            continue
        code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines()
                         if not line.lstrip().startswith(("#", '"', "'")))
        if path.name == "declarations.py":
            # a claim declaration quotes the paper's words (its source, paper value, reasons):
            # its strings may hold the paper's numbers, its code (bands) may not
            code = _code_without_strings(path)
        for lit in literals:
            if re.search(r"(?<![\w.])" + re.escape(lit) + r"(?![\w])", code):
                offenders.append(f"{path.relative_to(SRC)}: {lit}")
    assert not offenders, offenders
