"""protocol.stats against hand-computed cases and known distributions (protocol.md §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from protocol import stats as S


def test_summarize_odd_count_by_hand():
    s = S.summarize([5, 1, 4, 2, 3])
    assert (s.count, s.median, s.q1, s.q3, s.min, s.max) == (5, 3.0, 2.0, 4.0, 1.0, 5.0)
    assert s.spread == pytest.approx(2 / 3)
    assert s.range_spread == pytest.approx(4 / 3)
    assert s.noisy


def test_summarize_even_count_uses_linear_quartiles():
    # type-7 quartiles of 1,2,3,4: positions 0.75 and 2.25 -> 1.75 and 3.25
    s = S.summarize([4, 3, 2, 1])
    assert (s.q1, s.median, s.q3) == (1.75, 2.5, 3.25)


def test_spread_flag_threshold_is_five_percent():
    quiet = S.summarize([100, 101, 102, 103, 104])  # IQR 2 / median 102
    assert quiet.spread == pytest.approx(2 / 102) and not quiet.noisy
    loud = S.summarize([100, 100, 106, 112, 112])  # IQR 12 / 106 > 5 %
    assert loud.noisy


def test_summarize_empty():
    s = S.summarize([])
    assert s.count == 0 and math.isnan(s.median) and not s.noisy


def test_ratio_of_medians():
    assert S.ratio_of_medians([1, 2, 3], [2, 4, 60]) == 2.0


def test_paired_ratio_constant_ratio_is_degenerate():
    a = np.array([1.0, 2.0, 4.0, 8.0])
    r = S.paired_ratio(a, 1.25 * a)
    assert (r.median, r.lo, r.hi, r.pairs) == (1.25, 1.25, 1.25, 4)
    assert S.verdict(r) == "B slower by 25.0 % [25.0, 25.0]"


def test_paired_ratio_median_of_pair_ratios_not_ratio_of_medians():
    a = [1.0, 1.0, 10.0]
    b = [2.0, 3.0, 10.0]  # pair ratios 2, 3, 1 -> median 2; ratio of medians 3
    assert S.paired_ratio(a, b).median == 2.0
    assert S.ratio_of_medians(a, b) == 3.0


def test_paired_ratio_interval_is_seeded_and_brackets_median():
    rng = np.random.default_rng(3)
    a = rng.lognormal(0, 0.05, 25)
    b = a * rng.lognormal(0.03, 0.02, 25)
    r1 = S.paired_ratio(a, b, seed=11)
    r2 = S.paired_ratio(a, b, seed=11)
    assert r1 == r2
    ratios = b / a
    assert ratios.min() <= r1.lo <= r1.median <= r1.hi <= ratios.max()
    assert r1.resamples == 2000


def test_paired_ratio_interval_matches_an_independent_bootstrap():
    rng = np.random.default_rng(5)
    a = rng.lognormal(0, 0.05, 31)
    b = a * rng.lognormal(0.02, 0.03, 31)
    r = S.paired_ratio(a, b, resamples=20000, seed=1)
    ratios = b / a
    # plain NumPy percentile bootstrap of the median, another stream: same interval within the
    # bootstrap's own resolution (neighbouring order statistics)
    idx = np.random.default_rng(99).integers(0, ratios.size, (20000, ratios.size))
    medians = np.median(ratios[idx], axis=1)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    step = np.diff(np.sort(ratios)).max()
    assert abs(r.lo - lo) <= step and abs(r.hi - hi) <= step


def _unbatched(ratios, resamples, seed):
    """paired_ratio's interval the way it was computed before ``batch=``: every resample at once."""
    result = scipy.stats.bootstrap((ratios,), np.median, n_resamples=resamples, confidence_level=0.95,
                                   method="percentile", vectorized=True, axis=0, **S._rng_argument(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("pairs, budget", [(10_000, S.BOOTSTRAP_BATCH_VALUES), (101, 1000), (7, 20)])
def test_the_batched_bootstrap_gives_exactly_the_numbers_of_the_unbatched_one(monkeypatch, pairs, budget):
    # 10,000 pairs: the stream's case, 80 batches of 25 resamples; the others leave a short last batch
    monkeypatch.setattr(S, "BOOTSTRAP_BATCH_VALUES", budget)
    rng = np.random.default_rng(pairs)
    a = rng.lognormal(0, 0.2, pairs)
    b = a * rng.lognormal(0.02, 0.05, pairs)
    r = S.paired_ratio(a, b, seed=3)
    assert S.bootstrap_batch(pairs) < r.resamples  # really batched
    assert (r.lo, r.hi) == _unbatched(b / a, r.resamples, 3)  # exactly, not approximately
    assert r.median == float(np.median(b / a)) and r.seed == 3


def test_the_bootstrap_holds_a_bounded_block_of_resamples(monkeypatch):
    sizes = []
    real = scipy.stats.bootstrap

    def spy(data, statistic, **kwargs):
        def measured(x, axis):
            sizes.append(x.size)  # one batch of resamples, as the statistic sees it
            return statistic(x, axis=axis)

        return real(data, measured, **kwargs)

    monkeypatch.setattr(scipy.stats, "bootstrap", spy)
    rng = np.random.default_rng(2)
    a = rng.lognormal(0, 0.2, 10_000)
    S.paired_ratio(a, a * rng.lognormal(0, 0.05, 10_000))
    resampled = [size for size in sizes if size > 10_000]  # SciPy may also call it on the sample itself
    assert sum(resampled) == 2000 * 10_000  # every resample, ...
    assert max(resampled) <= S.BOOTSTRAP_BATCH_VALUES  # ... in blocks of at most 250,000 values (2 MB)
    assert S.bootstrap_batch(10_000) == 25 and S.bootstrap_batch(10**6) == 1 and S.bootstrap_batch(0) == 250_000


def test_paired_ratio_rejects_mismatch_and_too_few_resamples():
    with pytest.raises(ValueError, match="differ in length"):
        S.paired_ratio([1, 2], [1])
    with pytest.raises(ValueError, match="2000"):
        S.paired_ratio([1, 2], [1, 2], resamples=500)


@pytest.mark.parametrize("seed", range(5))
def test_aa_from_one_distribution_contains_one(seed):
    rng = np.random.default_rng(seed)
    base = rng.lognormal(0, 0.1, 41)  # slow drift between pairs, shared by both rounds
    a = base * rng.lognormal(0, 0.01, 41)
    b = base * rng.lognormal(0, 0.01, 41)
    assert S.paired_ratio(a, b, seed=seed).contains_one


@pytest.mark.parametrize("seed", range(5))
def test_planted_three_percent_is_detected(seed):
    rng = np.random.default_rng(100 + seed)
    base = rng.lognormal(0, 0.1, 21)
    a = base * rng.lognormal(0, 0.01, 21)
    b = 1.03 * base * rng.lognormal(0, 0.01, 21)
    r = S.paired_ratio(a, b, seed=seed)
    assert r.lo > 1.0 and r.hi < 1.06
    assert S.verdict(r).startswith("B slower by ")


def test_verdict_strings():
    slower = S.PairedRatio(1.042, 1.031, 1.0595, 21, 2000, 0)
    assert S.verdict(slower) == "B slower by 4.2 % [3.1, 6.0]"
    faster = S.PairedRatio(0.9, 0.85, 0.95, 21, 2000, 0)
    assert S.verdict(faster) == "B faster by 10.0 % [5.0, 15.0]"
    same = S.PairedRatio(1.01, 0.99, 1.02, 21, 2000, 0)
    assert S.verdict(same) == "no difference detected"
    assert S.verdict(S.PairedRatio(math.nan, math.nan, math.nan, 0, 2000, 0)) == "not measured"


def test_provisional_rule():
    assert S.provisional(9.99, 19)
    assert not S.provisional(9.99, 20)
    assert not S.provisional(10.0, 5)


def test_round_trip_cost():
    assert S.round_trip_cost_ms(1.0, 3.0, 1, 11) == pytest.approx(0.2)
    assert S.round_trip_cost_ms(1.0, 3.0, 4, 4) is None


# -- the hierarchical bootstrap (protocol.md §7 "Hierarchical interval") ------------------------
def test_hierarchical_bootstrap_distribution_by_hand():
    # processes X = ratios (1, 3) and Y = (2): draw two processes with replacement, then each
    # drawn process's pairs with replacement, and take the pooled median:
    #   XX (1/4): four draws of {1, 3}: median 1 w.p. 5/16, 2 w.p. 6/16, 3 w.p. 5/16
    #   XY, YX (1/2): two draws of {1, 3} and a 2: median 1 w.p. 1/4, 2 w.p. 1/2, 3 w.p. 1/4
    #   YY (1/4): (2, 2): median 2
    # so P(1) = P(3) = 13/64 and P(2) = 38/64
    medians = S.hierarchical_medians([np.array([1.0, 3.0]), np.array([2.0])], resamples=200_000,
                                     rng=np.random.default_rng(7))
    assert set(np.unique(medians)) == {1.0, 2.0, 3.0}
    for value, p in ((1.0, 13 / 64), (2.0, 38 / 64), (3.0, 13 / 64)):
        assert (medians == value).mean() == pytest.approx(p, abs=0.004)


def test_hierarchical_ratio_by_hand():
    # two processes, each with one constant ratio: a resample is XX (median 1), YY (2) or XY (1.5)
    r = S.hierarchical_ratio([1, 1, 1, 1], [1, 1, 2, 2], [0, 0, 1, 1])
    assert (r.median, r.lo, r.hi, r.pairs, r.processes) == (1.5, 1.0, 2.0, 4, 2)
    assert S.verdict(r) == "no difference detected"


def test_hierarchical_ratio_with_one_process_is_the_paired_ratio():
    rng = np.random.default_rng(8)
    a = rng.lognormal(0, 0.05, 21)
    b = a * rng.lognormal(0.02, 0.02, 21)
    for labels in (np.zeros(21), np.full(21, 7)):
        assert S.hierarchical_ratio(a, b, labels, seed=4) == S.paired_ratio(a, b, seed=4)


def _processes(seed, shift, per=15):
    """Pairs of three processes whose ratio is 1.03, the processes shifted by a factor exp(-shift),
    1 and exp(shift) (in a seeded order), with 0.5 % noise within each process."""
    rng = np.random.default_rng(seed)
    a = rng.lognormal(0, 0.05, 3 * per)
    offsets = np.repeat(np.exp(rng.permutation([-shift, 0.0, shift])), per)
    b = 1.03 * a * offsets * rng.lognormal(0, 0.005, 3 * per)
    return a, b, np.repeat(np.arange(3), per)


@pytest.mark.parametrize("seed", range(5))
def test_a_between_process_shift_widens_the_interval(seed):
    a, b, labels = _processes(seed, shift=0.02)
    within_only = S.paired_ratio(a, b, seed=seed)
    hierarchical = S.hierarchical_ratio(a, b, labels, seed=seed)
    assert hierarchical.median == within_only.median  # the same point: the median of every pair
    assert (hierarchical.hi - hierarchical.lo) > 2 * (within_only.hi - within_only.lo)
    assert hierarchical.lo <= within_only.lo and within_only.hi <= hierarchical.hi
    # the same pairs without the shift: the hierarchical interval is much narrower
    quiet = S.hierarchical_ratio(*_processes(seed, shift=0.0), seed=seed)
    assert (hierarchical.hi - hierarchical.lo) > 2 * (quiet.hi - quiet.lo)


@pytest.mark.parametrize("seed", range(5))
def test_without_a_process_shift_a_planted_slowdown_is_still_found(seed):
    a, b, labels = _processes(seed, shift=0.0)
    hierarchical = S.hierarchical_ratio(a, b, labels, seed=seed)
    assert 1.0 < hierarchical.lo < 1.03 < hierarchical.hi < 1.04
    assert S.verdict(hierarchical).startswith("B slower by ")


def test_hierarchical_ratio_is_seeded_and_checks_its_input():
    a, b, labels = _processes(1, shift=0.02)
    assert S.hierarchical_ratio(a, b, labels, seed=3) == S.hierarchical_ratio(a, b, labels, seed=3)
    assert S.hierarchical_ratio(a, b, labels, seed=3) != S.hierarchical_ratio(a, b, labels, seed=4)
    assert S.hierarchical_ratio(a, b, labels).resamples == 2000
    with pytest.raises(ValueError, match="process labels"):
        S.hierarchical_ratio(a, b, labels[:-1])
    with pytest.raises(ValueError, match="2000"):
        S.hierarchical_ratio(a, b, labels, resamples=100)


def test_process_spread_by_hand():
    a = np.ones(8)
    b = np.array([1.0, 1.0, 1.1, 1.1, 2.0, 2.2, 2.2, 2.2])
    spread = S.process_spread(a, b, [5, 5, 5, 5, 1, 1, 1, 1])  # listed in order of appearance
    assert spread.processes == 2 and spread.pairs == [4, 4]
    assert spread.medians == pytest.approx([1.05, 2.2])
    # IQR / median: process 5: (1.1 - 1.0) / 1.05; process 1: (2.2 - 2.15) / 2.2; median of the two
    assert spread.within == pytest.approx(((0.1 / 1.05) + (0.05 / 2.2)) / 2)
    assert spread.between == pytest.approx((2.2 - 1.05) / 1.625)
    one = S.process_spread([1, 1, 1], [1.0, 1.2, 1.1], [0, 0, 0])
    assert one.processes == 1 and one.between is None and one.within == pytest.approx(0.1 / 1.1)


# -- a time of zero: a pair whose ratio is infinite ----------------------------------------------
def test_an_infinite_pair_ratio_gives_an_open_interval_not_a_nan_bound():
    # a round of side A timed at 0 ms (CUDA events resolve about 0.5 us) makes its pair's ratio
    # infinite; the hierarchical bootstrap's percentile interpolated inf - inf into a NaN upper
    # bound, and the verdict read [1.0, NaN] as "B faster by 0.0 % [nan, 0.0]"
    a = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    b = [1.0, 1.0, 1.0, 1.0, 1.0, 1.1]
    r = S.hierarchical_ratio(a, b, [0, 1, 0, 1, 0, 1], seed=0)
    assert r.processes == 2 and r.median == 1.0
    assert not math.isnan(r.lo) and not math.isnan(r.hi)
    assert r.hi == math.inf and r.lo <= 1.0
    assert S.verdict(r) == "no difference detected"
    # the same pairs in one process: SciPy's bootstrap, which says the same
    one = S.hierarchical_ratio(a, b, [0] * 6, seed=0)
    assert one.hi == math.inf and S.verdict(one) == "no difference detected"


def test_the_interval_of_finite_ratios_is_numpys_percentile_as_before():
    rng = np.random.default_rng(3)
    a = rng.normal(10.0, 0.3, 40)
    b = a * rng.normal(1.02, 0.01, 40)
    processes = np.repeat([0, 1, 2, 3], 10)
    r = S.hierarchical_ratio(a, b, processes, seed=4)
    groups = [(b / a)[processes == g] for g in range(4)]
    medians = S.hierarchical_medians(groups, resamples=2000, rng=np.random.default_rng(4))
    lo, hi = np.percentile(medians, [2.5, 97.5])
    assert (r.lo, r.hi) == (float(lo), float(hi))


@pytest.mark.parametrize("lo, hi", [(math.nan, 0.99), (1.01, math.nan), (math.nan, math.nan)])
def test_a_verdict_never_claims_a_difference_from_a_nan_bound(lo, hi):
    ratio = S.PairedRatio(1.0, lo, hi, 10, 2000, 0)
    assert S.verdict(ratio) == "not measured"


def test_percentile_interval_takes_an_infinity_next_to_it_as_the_bound():
    # 20 values, one infinite: the 97.5th percentile falls between 19 and inf at fraction 0.525,
    # where NumPy 2's interpolation computes inf - inf (a NaN, the bound before c9a20d6); the lower
    # bound is NumPy's linear percentile as before
    values = [float(v) for v in range(1, 20)] + [math.inf]
    assert S.percentile_interval(values) == (1.475, math.inf)
    assert S.percentile_interval([math.inf] * 20) == (math.inf, math.inf)
    lo, hi = S.percentile_interval([1.0] * 19 + [math.nan])  # a NaN stays NaN: "not measured"
    assert math.isnan(lo) and math.isnan(hi)


@pytest.mark.parametrize("processes", [[0] * 6, [0, 1, 0, 1, 0, 1]])
def test_a_pair_timed_0_ms_on_both_sides_leaves_the_ratio_to_the_others(processes):
    # its ratio 0 / 0 was a NaN that the median spread to the whole cell
    a = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    b = [0.0, 1.1, 1.1, 1.2, 1.1, 1.1]
    r = S.hierarchical_ratio(a, b, processes, seed=0)
    rest = S.hierarchical_ratio(a[1:], b[1:], processes[1:], seed=0)
    assert r.timeless_pairs == 1 and r.pairs == 5
    assert (r.median, r.lo, r.hi, r.processes) == (rest.median, rest.lo, rest.hi, rest.processes)
    spread = S.process_spread(a, b, processes)
    assert spread.pairs == S.process_spread(a[1:], b[1:], processes[1:]).pairs


def test_pairs_all_timed_0_ms_on_both_sides_are_named_by_the_verdict():
    r = S.hierarchical_ratio([0.0, 0.0], [0.0, 0.0], [0, 1], seed=0)
    assert r.pairs == 0 and r.timeless_pairs == 2
    assert S.verdict(r) == "not measured: all 2 pairs timed 0 ms on both sides (below the clock's resolution)"
