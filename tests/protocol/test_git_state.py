"""protocol.environment.git_state on a real git repository: the records a measurement writes into
the tree (results/, results/sweep) do not make the tree dirty when excluded; any other change does."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from protocol.environment import git_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
                    "-c", "init.defaultBranch=main", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "results").mkdir(parents=True)
    (root / "engines").mkdir()
    (root / "engines" / "code.py").write_text("x = 1\n")
    (root / "results" / "M7.md").write_text("old report\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    return root


def test_a_clean_checkout_is_clean(repo):
    state = git_state(repo)
    assert state["commit"] and len(state["commit"]) == 40
    assert state["dirty"] is False


def test_records_written_into_an_excluded_folder_leave_it_clean(repo):
    sweep = repo / "results" / "sweep"
    (sweep / "campaigns" / "roadNet-PA").mkdir(parents=True)
    (sweep / "sweep.json").write_text("{}")
    (sweep / "campaigns" / "roadNet-PA" / "campaign.json").write_text("{}")
    assert git_state(repo)["dirty"] is True
    assert git_state(repo, exclude=(sweep,))["dirty"] is False
    # a tracked record changed in the excluded folder (bench-commit into results/, resumed)
    (repo / "results" / "M7.md").write_text("new report\n")
    assert git_state(repo, exclude=(sweep,))["dirty"] is True
    assert git_state(repo, exclude=(repo / "results",))["dirty"] is False


def test_code_changes_count_whatever_is_excluded(repo):
    (repo / "engines" / "code.py").write_text("x = 2\n")
    assert git_state(repo, exclude=(repo / "results",))["dirty"] is True
    (repo / "engines" / "code.py").write_text("x = 1\n")
    (repo / "engines" / "new.py").write_text("")
    assert git_state(repo, exclude=(repo / "results",))["dirty"] is True


def test_folders_outside_the_repository_or_the_repository_itself_exclude_nothing(repo, tmp_path):
    (repo / "engines" / "new.py").write_text("")
    assert git_state(repo, exclude=(tmp_path / "elsewhere", repo))["dirty"] is True


def test_an_excluded_name_is_not_a_pattern(repo):
    """A records folder named with a wildcard hides only itself (literal pathspecs)."""
    star = repo / "results" / "r*"
    star.mkdir()
    (star / "sweep.json").write_text("{}")
    (repo / "results" / "report.txt").write_text("untracked, outside the records")
    assert git_state(repo, exclude=(star,))["dirty"] is True
    (repo / "results" / "report.txt").unlink()
    assert git_state(repo, exclude=(star,))["dirty"] is False


def test_a_folder_holding_code_is_never_left_out(repo):
    """An --out pointed at the code by mistake must not hide that code's changes."""
    (repo / "engines" / "code.py").write_text("x = 2\n")
    (repo / "engines" / "records.json").write_text("{}")
    assert git_state(repo, exclude=(repo / "engines",))["dirty"] is True


def test_no_commit_is_dirty(tmp_path):
    bare = tmp_path / "empty"
    bare.mkdir()
    _git(bare, "init", "-q")
    state = git_state(bare, exclude=(bare / "results",))
    assert state == {"commit": None, "dirty": True}
