"""P2's anatomy of a trained stack: evaluation sets and a resumable perplexity evaluator
(`evalsets`, `evaluator`), reversible in-place layer edits (`edits`), the importance map and
its anchors (`importance`), and the five manipulation strategies (`strategies`).

Used by chapters 05–09 (and 10 for the layer classes).
"""
