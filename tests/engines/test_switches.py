"""The engines' environment switches (engines/sssp/cuda/switches.py): the spellings each kind
accepts, and a bad value an InvalidArgumentError naming the switch, never a traceback."""

from __future__ import annotations

import pytest

from engines import errors
from engines.graph import device_apply
from engines.sssp.cuda import fused, mapped, operators, switches

from tests.switch_env import set_switch

NAME = "ENGINES_TEST_SWITCH"


@pytest.mark.parametrize("text, on", [(None, False), ("", False), ("0", False), (" Off ", False),
                                      ("1", True), ("ON", True)])
def test_flag(monkeypatch, text, on):
    set_switch(monkeypatch, NAME, text)
    assert switches.flag(NAME) is on


@pytest.mark.parametrize("text", ["2", "yes", "true", "-1"])
def test_a_bad_flag_names_the_switch(monkeypatch, text):
    monkeypatch.setenv(NAME, text)
    with pytest.raises(errors.InvalidArgumentError, match=f"{NAME}=.*expected 1/on or 0/off"):
        switches.flag(NAME)


#: The on/off switches each engine reads through switches.flag, by their readers: (reader, switch,
#: its value when unset). One test of each one's spellings and bad values, instead of a copy of
#: test_flag beside every switch.
_FLAG_SWITCHES = [(mapped.enabled, mapped.MAPPED_RECORDS_ENV, True),
                  (fused.poll_record_enabled, fused.POLL_RECORD_ENV, False),
                  (operators.captured_start_enabled, operators.CAPTURED_START_ENV, False),
                  (device_apply.changes_grid, device_apply.CHANGES_GRID_ENV, True)]


@pytest.mark.parametrize("reader, name, default", _FLAG_SWITCHES, ids=[n for _, n, _ in _FLAG_SWITCHES])
@pytest.mark.parametrize("text, on", [(None, None), ("", None), ("0", False), ("off", False), (" off ", False),
                                      ("1", True), (" on ", True), (" ON ", True)])
def test_each_flag_switch_reads_its_default_and_both_spellings(monkeypatch, reader, name, default, text, on):
    set_switch(monkeypatch, name, text)
    assert reader() is (default if on is None else on)


@pytest.mark.parametrize("reader, name, default", _FLAG_SWITCHES, ids=[n for _, n, _ in _FLAG_SWITCHES])
@pytest.mark.parametrize("text", ["mapped", "always", "yes please", "sometimes"])
def test_a_bad_value_of_each_flag_switch_names_it(monkeypatch, reader, name, default, text):
    monkeypatch.setenv(name, text)
    with pytest.raises(errors.InvalidArgumentError, match=name):
        reader()


@pytest.mark.parametrize("default, text, value", [
    (0, None, 0), (0, "off", 0), (0, "0", 0), (0, "1024", 1024), (0, " 7 ", 7),
    # a default is the value only when unset (or empty); 0 and off still mean 0
    (64, None, 64), (64, "", 64), (64, "off", 0), (64, "0", 0), (64, "7", 7)])
def test_count(monkeypatch, default, text, value):
    set_switch(monkeypatch, NAME, text)
    assert switches.count(NAME, "a number of edges", default=default) == value
    if default == 0:  # the parameter's own default
        assert switches.count(NAME, "a number of edges") == value


@pytest.mark.parametrize("text, minimum", [("-1", 0), ("x", 0), ("1.5", 0), ("0x10", 1), ("-3", 1)])
def test_a_bad_count_names_the_switch_and_what_it_counts(monkeypatch, text, minimum):
    monkeypatch.setenv(NAME, text)
    with pytest.raises(errors.InvalidArgumentError, match=f"{NAME}=.*expected a number of blocks"):
        switches.count(NAME, "a number of blocks", minimum=minimum)


def test_the_fused_grid_cap_is_a_count(monkeypatch):
    """ENGINES_FUSED_MAX_BLOCKS was read with a bare int(): a typo ended in a ValueError traceback.
    fused.grid_blocks with the device's answers replaced (528 co-resident blocks, 132 SMs)."""
    from types import SimpleNamespace

    from engines.sssp.cuda import fused, runtime

    monkeypatch.setattr(runtime, "cooperative_grid", lambda *args: 528)
    monkeypatch.setattr(runtime, "device_info", lambda device: SimpleNamespace(multiprocessors=132))
    monkeypatch.setenv(fused.GRID_ENV, "device")
    module = SimpleNamespace(device=0)
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "3")
    assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6) == 3
    monkeypatch.delenv(fused.MAX_BLOCKS_ENV)
    assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6) == 528
    for bad in ("many", "0", "-2"):
        monkeypatch.setenv(fused.MAX_BLOCKS_ENV, bad)
        if bad == "0":  # 0 is "off", as for every count switch
            assert fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6) == 528
            continue
        with pytest.raises(errors.InvalidArgumentError, match=fused.MAX_BLOCKS_ENV):
            fused.grid_blocks(module, "fused_update", "int32", "int32", 10**6)


def test_choice(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert switches.choice(NAME, ("work", "device"), "work") == "work"
    monkeypatch.setenv(NAME, "device")
    assert switches.choice(NAME, ("work", "device"), "work") == "device"
    monkeypatch.setenv(NAME, "whole")
    with pytest.raises(errors.InvalidArgumentError, match=f"{NAME}='whole': expected one of work, device"):
        switches.choice(NAME, ("work", "device"), "work")


@pytest.mark.parametrize("text, ok", [("1", True), ("5", True), ("6", False), ("0", True), ("off", True)])
def test_a_count_switch_may_have_a_maximum(monkeypatch, text, ok):
    monkeypatch.setenv("ENGINES_TEST_COUNT", text)
    if ok:
        assert switches.count("ENGINES_TEST_COUNT", "widgets", minimum=1, maximum=5) == int(text.replace("off", "0"))
    else:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"ENGINES_TEST_COUNT='6': expected widgets \(an integer of at least 1 and at most 5\)"):
            switches.count("ENGINES_TEST_COUNT", "widgets", minimum=1, maximum=5)


@pytest.mark.parametrize("text, events", [(None, 1024), ("off", 1024), ("0", 1024), ("4096", 4096), (" 64 ", 64)])
def test_the_apply_capacity_floor(monkeypatch, text, events):
    """ENGINES_APPLY_MIN_EVENTS (device_apply.min_events): the smallest event capacity a graph
    reserves, MIN_EVENTS when unset or off; a bad value names the switch."""
    from engines.graph import device_apply

    assert device_apply.MIN_EVENTS == 1024
    set_switch(monkeypatch, device_apply.MIN_EVENTS_ENV, text)
    assert device_apply.min_events() == events


#: The device apply's two switches: (the reader, its switch's name attribute, what the message says it expects).
_APPLY_SWITCHES = [("min_events", "MIN_EVENTS_ENV", "an event capacity"),
                   ("touched_scan_limit", "TOUCHED_SCAN_ENV", "an event count")]


@pytest.mark.parametrize("reader, env, expects", _APPLY_SWITCHES, ids=[r for r, _, _ in _APPLY_SWITCHES])
@pytest.mark.parametrize("text", ["-1", "many", "1e3", "2.5", str((1 << 24) + 1)])
def test_a_bad_apply_switch_names_itself(monkeypatch, reader, env, expects, text):
    from engines.graph import device_apply

    name = getattr(device_apply, env)
    monkeypatch.setenv(name, text)
    with pytest.raises(errors.InvalidArgumentError, match=f"{name}=.*{expects}"):
        getattr(device_apply, reader)()


@pytest.mark.parametrize("text, limit", [(None, "default"), ("", "default"), ("off", 0), ("0", 0),
                                         ("4096", 4096), (" 16384 ", 16384)])
def test_the_touched_scan_limit(monkeypatch, text, limit):
    """ENGINES_APPLY_TOUCHED_SCAN (device_apply.touched_scan_limit): the largest event count whose
    commit sums the touched rows only; TOUCHED_SCAN_MAX when unset, 0 (never) when 0 or off."""
    from engines.graph import device_apply

    set_switch(monkeypatch, device_apply.TOUCHED_SCAN_ENV, text)
    want = device_apply.TOUCHED_SCAN_MAX if limit == "default" else limit
    assert device_apply.touched_scan_limit() == want


@pytest.mark.parametrize("text, percent", [(None, "default"), ("", "default"), ("off", 0), ("0", 0),
                                           ("1", 1), (" 50 ", 50), ("100", 100)])
def test_the_pull_by_offers_percent(monkeypatch, text, percent):
    """ENGINES_PULL_OFFERS (fused.offers_percent): the percent of the vertices an update's
    candidates must exceed for the pull by offers; OFFERS_DEFAULT when unset, 0 (never) when 0
    or off."""
    set_switch(monkeypatch, fused.OFFERS_ENV, text)
    assert fused.offers_percent() == (fused.OFFERS_DEFAULT if percent == "default" else percent)


@pytest.mark.parametrize("text", ["101", "-5", "half", "12.5"])
def test_a_bad_pull_by_offers_percent_names_the_switch(monkeypatch, text):
    monkeypatch.setenv(fused.OFFERS_ENV, text)
    with pytest.raises(errors.InvalidArgumentError,
                       match=rf"ENGINES_PULL_OFFERS=.*a percent of the vertices \(an integer of at least 1 and at most 100\)"):
        fused.offers_percent()


@pytest.mark.parametrize("n, percent, above", [(1_090_920, 50, 545_460), (1_090_920, 0, 1_090_920),
                                               (99, 1, 0), (100, 1, 1), (7, 100, 7), (0, 50, 0)])
def test_the_kernels_offer_limit(n, percent, above):
    """fused.offer_above: the candidate count above which the kernel pulls by offers; off is n,
    which no update's candidates exceed (each vertex is listed once, the source never)."""
    assert fused.offer_above(n, percent) == above
