"""`layerlab report MODEL`: both papers' per-model diagnostics on any causal LM, one page.

P1 (Liu et al.): θ(h_l, h_{l+1}) and θ(Δh_l, Δh_{l+1}) per layer under both last-state
conventions, the relative update size, the last-block CE lens and the token-profile bulk
fraction with its position-0 control and chapter 03's interval over windows and layer-shuffled
control, each beside the same configuration freshly initialised. P2 (Wietrzykowski): the
importance map by neighbour averaging and by removal with bootstrap intervals and the book's
classes, the consecutive-delta correlation per tensor type with its i.i.d., shuffled and
untrained nulls, ridge R² in-sample against leave-one-out, the ×α scaling sweep on the least
important layers, and there the other strategies at full strength and at ×0.9's size (chapter
06's control).

Each summary row asks a book claim of this model with the book's own rule where the report's
data allow it, and says where and why its answer can differ from the book's (`rules.WHY`).

Every step is stored in `OUT/cache/` as soon as it finishes (an interrupted run resumes there);
`report.html` (self-contained: charts render with no network) and `report.json` (every number
and the provenance) are written last, atomically, so a `report.json` on disk is a finished
report.

Used by `layerlab report` and chapter 12.
"""

from layerlab.report.build import ReportError, build  # noqa: F401
