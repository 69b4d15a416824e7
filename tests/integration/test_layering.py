"""The folders' layering: includes point down only.
    engine/base  <-  engine  <-  strategies, datasets  <-  estimator  <-  cli
    engine/base, the layer table  <-  config_schema  <-  estimator, cli
engine/base/ (Status, did_you_mean, the job-spec structs) includes nothing of
the project above it; engine/ never includes strategies/, datasets/,
estimator/, cli/ or config_schema/; strategies/ and datasets/ never include
estimator/, cli/ or config_schema/; config_schema/ (the job loader) uses only
engine/base/ and the layer table (engine/layers/registry.hpp), whose rows
give each layer type's schema and options. Reads the sources under
DTRAIN_SOURCE_ROOT."""
import re
from pathlib import Path

from conftest import SOURCE_ROOT

TOP = ("engine", "strategies", "datasets", "estimator", "cli", "config_schema")
# folder -> (the folders its sources must not include, the folders allowed
# inside those). The most specific folder's rule applies to a file.
RULES = {
    "engine/base": (TOP, ("engine/base",)),
    "engine": (("strategies", "datasets", "estimator", "cli", "config_schema"), ()),
    "strategies": (("estimator", "cli", "config_schema"), ()),
    "datasets": (("estimator", "cli", "config_schema"), ()),
    "config_schema": (("engine", "strategies", "datasets", "estimator", "cli"),
                      ("engine/base", "engine/layers/registry.hpp")),
}
# The old name of the rules (folder -> forbidden top-level folders).
FORBIDDEN = {folder: forbidden for folder, (forbidden, _) in RULES.items() if "/" not in folder}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inl"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def included_path(source, included, root):
    """The project-relative path an include names, or None: either
    project-relative ("strategies/x.hpp") or relative to the including file."""
    parts = Path(included).parts
    if not parts:
        return None
    if parts[0] not in ("..", "."):
        return Path(included).as_posix()
    try:
        return (source.parent / included).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def included_top_folder(source, included, root):
    """The top-level folder of `root` that an include names, or None."""
    path = included_path(source, included, root)
    return Path(path).parts[0] if path else None


def within(path, folders):
    return any(path == f or path.startswith(f + "/") for f in folders)


def offending_includes(root, folder, forbidden, allowed=(), skip=()):
    """'file:line: #include ...' for every include in root/folder (outside the
    folders `skip`) that names a forbidden folder and not an allowed one."""
    found = []
    for source in sorted((root / folder).rglob("*")):
        if source.suffix not in SOURCE_SUFFIXES or not source.is_file():
            continue
        if within(source.relative_to(root).as_posix(), skip):
            continue
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            path = included_path(source, m.group(1), root) if m else None
            if path and within(path, forbidden) and not within(path, allowed):
                found.append(f"{source.relative_to(root)}:{number}: {line.strip()}")
    return found


def every_offence(root):
    found = []
    for folder, (forbidden, allowed) in RULES.items():
        # Subfolders with rules of their own are checked by those.
        skip = [f for f in RULES if f.startswith(folder + "/")]
        found += offending_includes(root, folder, forbidden, allowed, skip)
    return found


def test_includes_point_down_only():
    assert (SOURCE_ROOT / "engine").is_dir(), f"no engine/ under DTRAIN_SOURCE_ROOT={SOURCE_ROOT}"
    found = every_offence(SOURCE_ROOT)
    assert not found, "includes that point up (see README, Layout):\n" + "\n".join(found)


def test_the_check_finds_an_upward_include(tmp_path):
    (tmp_path / "engine/layers").mkdir(parents=True)
    (tmp_path / "strategies").mkdir()
    (tmp_path / "engine/layers/bad.cpp").write_text(
        '// a layer\n#include "engine/tensor.hpp"\n#include "strategies/strategy.hpp"\n'
        '#include <datasets/pipeline.hpp>\n#include "../../strategies/mirrored.hpp"\n')
    assert offending_includes(tmp_path, "engine", FORBIDDEN["engine"]) == [
        'engine/layers/bad.cpp:3: #include "strategies/strategy.hpp"',
        "engine/layers/bad.cpp:4: #include <datasets/pipeline.hpp>",
        'engine/layers/bad.cpp:5: #include "../../strategies/mirrored.hpp"',
    ]


def test_the_check_holds_the_floor_and_the_loader(tmp_path):
    """engine/base/ may include only engine/base/; engine/ not config_schema/;
    config_schema/ only engine/base/ of engine/."""
    for d in ("engine/base", "engine/model", "config_schema"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "engine/base/status.hpp").write_text('#include "engine/base/did_you_mean.hpp"\n#include <string>\n')
    (tmp_path / "engine/base/job_spec.hpp").write_text('#include "engine/tensor.hpp"\n#include "../layer.hpp"\n')
    (tmp_path / "engine/model/model.hpp").write_text('#include "engine/base/job_spec.hpp"\n'
                                                     '#include "config_schema/job_loader.hpp"\n')
    (tmp_path / "config_schema/loader.cpp").write_text('#include "engine/base/status.hpp"\n#include "engine/tensor.hpp"\n')
    assert every_offence(tmp_path) == [
        'engine/base/job_spec.hpp:1: #include "engine/tensor.hpp"',
        'engine/base/job_spec.hpp:2: #include "../layer.hpp"',
        'engine/model/model.hpp:2: #include "config_schema/job_loader.hpp"',
        'config_schema/loader.cpp:2: #include "engine/tensor.hpp"',
    ]
