import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
# The tests mirror the package (tests/<stage>/test_*.py); some build on another module's fixtures and builders
# (`import test_writer`), so every folder of tests is importable from the start, whatever is collected first.
for _folder in sorted((ROOT / "tests").iterdir()):
    if _folder.is_dir() and any(_folder.glob("test_*.py")):
        sys.path.insert(1, str(_folder))

#: the end-to-end tests: each is marked `workflow` (pytest_collection_modifyitems)
WORKFLOW_TESTS = ROOT / "tests" / "workflow"
#: the umask of the shared small run: group-writable, so its files must come out 0664 (not mkstemp's 0600)
BASE_RUN_UMASK = 0o002


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n`, set in pyproject.toml), the tests of a shared finished run stay on one worker: the
    tests that use the small run (`base_run`, with the fixtures built on it) go together, so the run is made once
    and no two Snakemake processes work in its directory at once; the other end-to-end tests go by module, so a
    module's own finished runs (module-scoped fixtures) are made once too. Unit tests are spread one by one.
    Every test under tests/workflow/ is end to end: it is marked `workflow` here, so a module that forgets its
    `pytestmark` cannot slip into the loop of unit tests."""
    for item in items:
        if WORKFLOW_TESTS in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.workflow)
        if "base_run" in item.fixturenames:
            item.add_marker(pytest.mark.xdist_group("base_run"))
        elif item.get_closest_marker("workflow"):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.fixture(scope="module")
def reg():
    """The HSLS:09 registry (one per test module, so a module that changes it touches no other)."""
    from edm_ars.data.registry import load_registry

    return load_registry(ROOT / "registry" / "hsls09")


@pytest.fixture(scope="module")
def layout():
    """The official HSLS:09 layout file, parsed (one per test module)."""
    from edm_ars.data.layout import load_layout

    return load_layout(ROOT / "registry" / "hsls09" / "Layout_STUDENT.txt")


@pytest.fixture(scope="session")
def base_run(tmp_path_factory):
    """The small test configuration run once from empty to output/paper.pdf (under BASE_RUN_UMASK): the
    reference of the workflow tests and of the crash and reproducibility tests."""
    from workflow import snakemake

    workdir = tmp_path_factory.mktemp("run")
    previous = os.umask(BASE_RUN_UMASK)
    try:
        result = snakemake(workdir, "output/paper.pdf")
    finally:
        os.umask(previous)
    assert result.returncode == 0, result.stderr[-5000:]
    return workdir, result


@pytest.fixture
def small_disk(tmp_path):
    """small_disk(size) -> a folder in the test's tmp_path on a tmpfs of that size ('16k'), unmounted afterwards
    (root only: the test is skipped where mounting is not allowed)."""
    mounts = []

    def make(size: str):
        mount = tmp_path / f"disk{len(mounts)}"
        mount.mkdir()
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                              capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.strip() or made.returncode}")
        mounts.append(mount)
        return mount

    yield make
    for mount in mounts:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
