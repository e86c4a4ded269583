"""Rendering the book: `plots` (Altair), `survey` (chapter 00), `verdicts` (chapter 11),
`deviations` (the deviations page), `colab` (the setup cell), `outputs` (the freshness gate,
`make check-outputs`), `dryrun` (`make gpu-dry`). Sits on top: imports the ground floor and both
wings; nothing imports it."""
