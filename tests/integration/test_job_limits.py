"""Job files that would exhaust the machine end at once with exit 2: a file of
aliases of aliases (10^9 values once expanded), collections nested too deep,
a block repeated 10^8 times, a file of more than 4 MiB. Each run is held to
under a second and 100 MiB of peak RSS (the exact messages are pinned in
tests/bad_jobs/limits/expected.json)."""
import os
import subprocess
import tempfile
import time

import pytest

from conftest import SOURCE_ROOT, dtrain_bin, peak_rss_command, read_peak_rss_kib

LIMITS = SOURCE_ROOT / "tests/bad_jobs/limits"


def peak_rss_mib(*args):
    """(exit code, seconds, peak RSS in MiB) of one dtrain run (the seconds
    include the measuring wrapper's start, about 20 ms)."""
    report = tempfile.NamedTemporaryFile(delete=False)
    report.close()
    try:
        start = time.monotonic()
        code = subprocess.run(peak_rss_command([dtrain_bin(), *args], report.name), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode
        seconds = time.monotonic() - start
        return code, seconds, read_peak_rss_kib(report.name) / 1024
    finally:
        os.unlink(report.name)


@pytest.mark.parametrize("name", ["nested_aliases.yaml", "deep_nesting.yaml", "repeat_too_many.yaml"])
def test_expansion_bombs_end_fast_and_small(name):
    code, seconds, mib = peak_rss_mib("validate", LIMITS / name)
    assert code == 2
    assert seconds < 1.0, seconds
    assert mib < 100, mib


def test_a_job_file_over_4_mib_is_refused_before_parsing(tmp_path):
    job = tmp_path / "huge.yaml"
    job.write_text("model:\n  layers: [" + "{type: flatten}, " * 300000 + "]\n")
    code, seconds, mib = peak_rss_mib("validate", job)
    assert code == 2
    assert seconds < 1.0 and mib < 100, (seconds, mib)
    out = subprocess.run([dtrain_bin(), "validate", str(job)], capture_output=True, text=True)
    assert out.stderr == (f"dtrain: {job}: the job file is {job.stat().st_size} bytes; expected at most 4194304 "
                          "(a job file describes a run; data belongs in data files)\n")


def test_many_nodes_without_aliases_are_refused_too(tmp_path):
    job = tmp_path / "wide.yaml"
    job.write_text("model:\n  layers: [" + "1, " * 120000 + "]\n")
    out = subprocess.run([dtrain_bin(), "validate", str(job)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "the document holds more than 100000 nodes; expected at most that" in out.stderr
