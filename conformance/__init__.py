"""The conformance corpus: the golden cases every engine configuration must reproduce exactly.

``oracles`` the independent oracles (shared with the engine tests), ``mixes`` the graph presets and
batch mixes, ``golden`` the catalogue and its generator, ``store`` the shards and manifest,
``replay`` the replay of a case on an engine configuration, ``compare`` the replay command.
The corpus data lives in ``tests/golden/``.

    python -m conformance generate|verify|check|list [...]   (conformance.golden)
    python -m conformance compare --configs host[,...]        (conformance.compare)

Nothing here imports ``tests`` (a test checks it by parsing the imports).
"""
