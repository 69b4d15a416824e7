"""The command line: subcommand table, help, version, schema, devices, exit codes,
and the man page kept in step with the subcommand table."""
import json
import re

from conftest import SOURCE_ROOT, run_dtrain

SUBCOMMANDS = ["train", "evaluate", "predict", "export", "validate", "schema", "devices", "inspect", "runs", "data", "cluster", "launch", "server", "version"]
DATA_SUBCOMMANDS = ["fetch", "convert", "inspect", "bench", "sentencepiece"]


def help_subcommands():
    out = run_dtrain("--help")
    assert out.returncode == 0, out.stderr
    section = out.stdout.split("Subcommands:")[1].split("\n\n")[0]
    return [m.group(1) for m in re.finditer(r"^\s+(\S+)\s", section, re.M) if not m.group(1).startswith("-")]


def test_help_lists_every_subcommand_in_table_order():
    assert help_subcommands()[:len(SUBCOMMANDS)] == SUBCOMMANDS


def test_man_page_documents_exactly_the_cli_subcommands():
    man = (SOURCE_ROOT / "man/dtrain.1").read_text()
    documented = re.findall(r"^\.TP\n\\fBdtrain ([a-z_]+)(?: ([a-z_]+))?\\fR", man, re.M)
    assert sorted({cmd for cmd, _ in documented}) == sorted(help_subcommands())
    assert sorted(sub for cmd, sub in documented if cmd == "data") == sorted(DATA_SUBCOMMANDS)


def test_each_subcommand_has_help():
    for cmd in SUBCOMMANDS:
        out = run_dtrain(cmd, "--help")
        assert out.returncode == 0, (cmd, out.stderr)
        assert cmd in out.stdout
    for sub in DATA_SUBCOMMANDS:
        out = run_dtrain("data", sub, "--help")
        assert out.returncode == 0, (sub, out.stderr)
        assert sub in out.stdout


def test_version():
    out = run_dtrain("version")
    assert out.returncode == 0
    assert re.fullmatch(r"dtrain \d+\.\d+\.\d+\n", out.stdout)


def test_schema_is_the_embedded_schema_file():
    out = run_dtrain("schema")
    assert out.returncode == 0
    assert json.loads(out.stdout) == json.loads((SOURCE_ROOT / "config_schema/job.schema.json").read_text())


def test_devices_reports_cpus_and_gpu_status():
    out = run_dtrain("devices")
    assert out.returncode == 0
    assert re.search(r"cpu:0\.\.cpu:\d+\s+\d+ logical CPUs", out.stdout)
    assert "oneDNN" in out.stdout
    assert re.search(r"^(gpu:0|GPUs\s+none)", out.stdout, re.M)


def test_usage_errors_exit_2():
    assert run_dtrain().returncode == 2
    assert run_dtrain("frobnicate").returncode == 2
    assert run_dtrain("train").returncode == 2  # missing job file
    assert run_dtrain("train", "j.yaml", "--log-format", "xml").returncode == 2


def test_missing_job_file_is_a_config_error():
    out = run_dtrain("validate", "no/such/job.yaml")
    assert out.returncode == 2
    assert "no/such/job.yaml" in out.stderr
