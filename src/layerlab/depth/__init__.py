"""P1, inverse depth scaling (chapters 01–04): `scaling` (the Chinchilla fit), `family` (the
depth family trained here), `geometry` and `clusters` (hidden-state geometry and token profiles),
`toy` (teacher–student residual networks). Imports the ground floor only, never `anatomy`."""
