"""The A/B benchmark service: gate inputs (gates, stand-ins, weights, batches, prepare) and the
``perf_ab.py`` subcommands."""
