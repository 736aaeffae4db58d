#!/usr/bin/env python3
"""The core's layers, kept honest: every quoted #include of a file under core/ names a header of
its own layer or of a layer below (core/CMakeLists.txt lists them), by its path from core/
("model/trace.h"); gpu/ uses only the base and compute layers; no core file includes a Qt or CUDA
header. Prints each violation as FILE:LINE and exits 1 when there is one.

usage: python3 tools/check_layers.py [REPO_ROOT]
       python3 tools/check_layers.py --self-test   (a made-up tree with each kind of violation)
"""
import pathlib
import re
import sys

# Each layer and the layers it may use (its own is always allowed).
LAYERS = {
    "base": [],
    "text": ["base"],
    "io": ["base"],
    "compute": ["base"],
    "arch": ["base", "text", "io", "compute"],
    "model": ["base", "text", "io", "compute", "arch"],
    "train": ["base", "text", "io", "compute", "arch", "model"],
}
GPU_MAY_USE = ["base", "compute"]
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
FOREIGN = re.compile(r"^(Q[A-Za-z]*|cuda|cublas|cuda_runtime.*|driver_types\.h)(/|$|\.h)")


def includes(path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1), m.group(2)


def check(root):
    """The violations in the tree at root, one line each."""
    core = root / "core"
    problems = []
    sources = [p for p in core.rglob("*") if p.suffix in (".h", ".cpp")]
    if not sources:
        return [f"{core}: no sources"]
    layer_of = {}
    for p in sources:
        rel = p.relative_to(core)
        if len(rel.parts) != 2 or rel.parts[0] not in LAYERS:
            problems.append(f"{p}: not in one of the layers' folders ({', '.join(LAYERS)})")
            continue
        layer_of[rel.as_posix()] = rel.parts[0]
    for p in sources:
        rel = p.relative_to(core)
        mine = rel.parts[0]
        for n, kind, name in includes(p):
            where = f"{p.relative_to(root)}:{n}"
            if kind == "<":
                if FOREIGN.match(name):
                    problems.append(f"{where}: the core includes <{name}> (no Qt or CUDA here)")
                continue
            if name not in layer_of:
                problems.append(f'{where}: "{name}" is not a core header named by its path from '
                                f"core/ (layer/file.h)")
                continue
            theirs = layer_of[name]
            if theirs != mine and theirs not in LAYERS[mine]:
                problems.append(f'{where}: {mine}/ includes "{name}" from the higher layer '
                                f"{theirs}/ ({mine} may use: {', '.join(LAYERS[mine]) or 'none'})")
    for p in (root / "gpu").glob("*"):
        if p.suffix not in (".h", ".cpp", ".cu"):
            continue
        for n, kind, name in includes(p):
            layer = name.split("/")[0]
            if kind == '"' and layer in LAYERS and layer not in GPU_MAY_USE:
                problems.append(f'{p.relative_to(root)}:{n}: the CUDA backend includes "{name}" '
                                f"(it may use {', '.join(GPU_MAY_USE)} only)")
    return problems


def self_test():
    """Each rule flags a made-up violation, and a clean tree passes."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        files = {
            "core/base/ok.h": '#include <vector>\n',
            "core/model/m.h": '#include "base/ok.h"\n',
            "gpu/k.h": '#include "compute/c.h"\n',
            "core/compute/c.h": "",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        assert check(root) == [], check(root)
        bad = {
            "core/base/up.h": '#include "model/m.h"\n',  # a lower layer reaching up
            "core/text/bare.h": '#include "ok.h"\n',  # a header not named by its path
            "core/io/qt.h": "#include <QString>\n",  # Qt in the core
            "core/loose.h": "",  # outside the layers' folders
            "gpu/g.cpp": '#include "model/m.h"\n',  # the CUDA backend above compute
        }
        for name, text in bad.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        found = check(root)
        for name in bad:
            stem = name.split("/")[-1]
            assert any(stem in line for line in found), f"{name} was not flagged: {found}"
        assert len(found) == len(bad), found
    print("check_layers: self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
    problems = check(root)
    for line in problems:
        print(line)
    print(f"check_layers: {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
