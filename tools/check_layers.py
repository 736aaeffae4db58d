#!/usr/bin/env python3
"""The layers of the core and of the GUI, kept honest. Prints each violation as FILE:LINE and exits
1 when there is one.

The core: every quoted #include of a file under core/ names a header of its own layer or of a layer
below (core/CMakeLists.txt lists them), by its path from core/ ("model/trace.h"); gpu/ uses only the
base and compute layers; no core file includes a Qt or CUDA header.

The GUI (app/gui, the README's Layout): every file is in one of its folders — widgets/, session/,
views/ (the base every view shares), views/NAME/ (one view), figures/, shell/ — and its quoted
#includes name a core header by its path from core/ or a GUI header by its path from app/gui
("views/view.h") of its own folder or of a folder it may use (GUI_LAYERS); no views/NAME/ includes
another view's folder; and no files include each other in a circle (a header and its .cpp count as
one unit).

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
# The GUI's folders, lowest first, and the folders each may use (its own is always allowed; every
# one may use the core). "views/*" is each view's own folder: it may use the base views/, never
# another view's folder.
GUI_LAYERS = {
    "widgets": [],
    "session": ["widgets"],
    "views": ["widgets", "session"],
    "views/*": ["widgets", "session", "views"],
    "figures": ["widgets", "session", "views"],
    "shell": ["widgets", "session", "views", "views/*", "figures"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
FOREIGN = re.compile(r"^(Q[A-Za-z]*|cuda|cublas|cuda_runtime.*|driver_types\.h)(/|$|\.h)")


def includes(path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1), m.group(2)


def check(root):
    """The violations in the tree at root, one line each."""
    return check_core(root) + check_gui(root)


def check_core(root):
    """The core's and the CUDA backend's violations."""
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


def gui_folder(rel):
    """The folder a GUI file (its path from app/gui) belongs to: "views/attention" for a view's own
    files, "views" for the base, "widgets" …; None when it is in none of them."""
    parts = rel.parts
    if len(parts) == 2 and parts[0] in GUI_LAYERS:
        return parts[0]
    if len(parts) == 3 and parts[0] == "views":
        return "views/" + parts[1]
    return None


def gui_layer(folder):
    return "views/*" if folder.startswith("views/") else folder


def check_gui(root):
    """The GUI's violations: files outside the folders, includes up, across views, in a circle."""
    gui = root / "app" / "gui"
    core = root / "core"
    sources = sorted(p for p in gui.rglob("*") if p.suffix in (".h", ".cpp"))
    if not sources:
        return [f"{gui}: no sources"]
    problems = []
    folder_of = {}
    for p in sources:
        rel = p.relative_to(gui)
        folder = gui_folder(rel)
        if folder is None:
            problems.append(f"{p.relative_to(root)}: not in one of the GUI's folders "
                            f"({', '.join(f + '/' for f in GUI_LAYERS if f != 'views/*')}, "
                            f"views/NAME/)")
            continue
        folder_of[rel.as_posix()] = folder
    unit_edges = {}  # "views/why/why_view" → the units it includes
    for p in sources:
        rel = p.relative_to(gui).as_posix()
        mine = folder_of.get(rel)
        if mine is None:
            continue
        unit = rel.rsplit(".", 1)[0]
        edges = unit_edges.setdefault(unit, {})
        for n, kind, name in includes(p):
            if kind == "<":
                continue
            where = f"{p.relative_to(root)}:{n}"
            if name not in folder_of:
                if name.split("/")[0] in LAYERS and (core / name).is_file():
                    continue
                problems.append(f'{where}: "{name}" is neither a GUI header named by its path from '
                                f"app/gui/ (folder/file.h) nor a core header")
                continue
            theirs = folder_of[name]
            other = name.rsplit(".", 1)[0]
            if other != unit:
                edges.setdefault(other, where)
            if theirs == mine:
                continue
            if gui_layer(mine) == "views/*" and gui_layer(theirs) == "views/*":
                problems.append(f'{where}: the view {mine}/ includes "{name}" of another view '
                                f"({theirs}/): what two views share belongs in views/ or below")
            elif gui_layer(theirs) not in GUI_LAYERS[gui_layer(mine)]:
                allowed = ", ".join(GUI_LAYERS[gui_layer(mine)]) or "none"
                problems.append(f'{where}: {mine}/ includes "{name}" from {theirs}/, a higher '
                                f"folder ({mine} may use: {allowed})")
    problems += [f"{where}: files include each other in a circle: {' → '.join(cycle)}"
                 for where, cycle in cycles(unit_edges)]
    return problems


def cycles(edges):
    """Each circle of includes among the units, once: (where its first include is, the units)."""
    found, seen, done = [], set(), set()

    def visit(unit, path):
        if unit in path:
            cycle = path[path.index(unit):]
            key = frozenset(cycle)
            if key not in seen:
                seen.add(key)
                found.append((edges[cycle[0]][cycle[1 % len(cycle)]], cycle + [unit]))
            return
        if unit in done or unit not in edges:
            return
        for other in edges[unit]:
            visit(other, path + [unit])
        done.add(unit)

    for unit in sorted(edges):
        visit(unit, [])
    return found


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
            "app/gui/widgets/w.h": "#include <QWidget>\n",
            "app/gui/session/s.h": '#include "widgets/w.h"\n#include "model/m.h"\n',
            "app/gui/views/view.h": '#include "session/s.h"\n',
            "app/gui/views/a/a_view.h": '#include "views/view.h"\n',
            "app/gui/views/a/a_view.cpp": '#include "views/a/a_view.h"\n',
            "app/gui/views/b/b_view.h": '#include "views/view.h"\n',
            "app/gui/figures/f.h": '#include "views/view.h"\n',
            "app/gui/shell/main.cpp": '#include "views/a/a_view.h"\n#include "figures/f.h"\n',
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
            "app/gui/views/b/b_view.cpp": '#include "views/a/a_view.h"\n',  # a view using a view
            "app/gui/widgets/up.h": '#include "session/s.h"\n',  # a widget reaching up
            "app/gui/figures/fig.cpp": '#include "views/a/a_view.h"\n',  # a figure using a view
            "app/gui/session/loose.h": '#include "w.h"\n',  # a header not named by its path
            "app/gui/stray.h": "",  # outside the GUI's folders
            "app/gui/shell/ring_one.cpp": '#include "shell/ring_two.h"\n',  # a circle …
            "app/gui/shell/ring_two.h": '#include "shell/ring_one.h"\n',
            "app/gui/shell/ring_one.h": "",
        }
        for name, text in bad.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        found = check(root)
        ring = {"app/gui/shell/ring_two.h", "app/gui/shell/ring_one.h"}  # the circle: one line
        for name in bad:
            if name in ring:
                continue
            stem = name.split("/")[-1]
            assert any(stem in line for line in found), f"{name} was not flagged: {found}"
        circle = [line for line in found if "circle" in line]
        assert len(circle) == 1, found
        assert "shell/ring_one" in circle[0] and "shell/ring_two" in circle[0], found
        assert len(found) == len(bad) - len(ring), found
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
