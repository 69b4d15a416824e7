"""The folders' layering: includes point down only. engine/ never includes
strategies/, datasets/, estimator/ or cli/; strategies/ and datasets/ never
include estimator/ or cli/. Reads the sources under DTRAIN_SOURCE_ROOT."""
import re
from pathlib import Path

from conftest import SOURCE_ROOT

# folder -> the top-level folders its sources must not include (DESIGN.md, "Folders").
FORBIDDEN = {
    "engine": ("strategies", "datasets", "estimator", "cli"),
    "strategies": ("estimator", "cli"),
    "datasets": ("estimator", "cli"),
}
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh", ".inl"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def included_top_folder(source, included, root):
    """The top-level folder of `root` that an include names, or None: either
    project-relative ("strategies/x.hpp") or relative to the including file."""
    first = Path(included).parts[0] if Path(included).parts else ""
    if first not in ("..", "."):
        return first
    try:
        return (source.parent / included).resolve().relative_to(root.resolve()).parts[0]
    except ValueError:
        return None


def offending_includes(root, folder, forbidden):
    """'file:line: #include ...' for every include in root/folder that names a forbidden folder."""
    found = []
    for source in sorted((root / folder).rglob("*")):
        if source.suffix not in SOURCE_SUFFIXES or not source.is_file():
            continue
        for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and included_top_folder(source, m.group(1), root) in forbidden:
                found.append(f"{source.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_includes_point_down_only():
    assert (SOURCE_ROOT / "engine").is_dir(), f"no engine/ under DTRAIN_SOURCE_ROOT={SOURCE_ROOT}"
    found = [hit for folder, forbidden in FORBIDDEN.items() for hit in offending_includes(SOURCE_ROOT, folder, forbidden)]
    assert not found, "includes that point up (see DESIGN.md, Folders):\n" + "\n".join(found)


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
