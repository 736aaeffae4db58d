"""Check that the repository stands alone: no tracked file points outside it.

A clone of the repository must contain everything its files point to. This fails (exit status 1,
one line per finding: FILE:LINE: what, and why) when a tracked text file
  - names a place on the machine the project was made on: an absolute path under /work/, /home/,
    /Users/ or /root/;
  - names the private copies of the tutorials the project was built from (a "shared/reference"
    folder, files such as 000_<hash>.txt or 003_*.txt), or a sibling folder of the repository
    (../shared/...): cite the tutorials by their public names instead (docs/tutorials.md);
  - has a relative path that climbs out of the repository (../ more often than the file is deep);
  - (Markdown) links to, shows as an image, or names in `code` a repository path that does not exist
    in the repository: docs/guide.md, `tools/stio.py`, ![x](images/a.png) must all be there.

usage: python3 tools/check_self_contained.py [--root DIR]     check the repository (default: this one)
       python3 tools/check_self_contained.py --self-test      check the rules on made-up lines

The files are the ones git tracks (`git ls-files`), or, outside a git checkout, every file under the
root except build folders. Binary files (a NUL byte in the first 8 KiB) are skipped, and so is
tests/data (reference tensors and made-up model files, whose bytes are data, not references), and
so is this file, which must name the patterns it looks for (--self-test checks its rules).
"""
import argparse
import os
import re
import subprocess
import sys

# Folders whose files are data, not text a reader follows.
SKIP_PREFIXES = ("tests/data/", "tests/fuzz/corpus/", "tests/fuzz/checkpoint_corpus/")
# Files skipped by name. This checker itself: to find the forbidden patterns it must name them (in
# its rules, its docstring and the made-up bad lines of --self-test), so it would flag itself. Its
# rules are checked by --self-test instead.
SKIP_FILES = ("tools/check_self_contained.py",)

# Absolute paths of a development machine.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|Users|root)/[\w.-]+")
# The private copies of the tutorials: the folder and the file names (000_0123456789abcdef.txt,
# 003_*.txt).
REFERENCE_COPY = re.compile(r"shared/reference|\b00\d_(?:[0-9a-f]{16}|\*)\.txt\b")
# A path that starts by climbing: ../x, ../../x/y.
CLIMBING = re.compile(r"(?<![\w./-])((?:\.\./)+)([\w.*-]+(?:/[\w.*-]+)*)")
# Markdown: links and images [text](target), ![alt](target), <img src="target">, and code spans.
MD_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
MD_IMG_TAG = re.compile(r"<img\s[^>]*src=\"([^\"]+)\"")
MD_CODE = re.compile(r"`([^`\n]+)`")
# What counts as "a repository path" inside a code span: the first folder is a top-level folder of
# the repository (computed per repository), then path characters only.
PATH_CHARS = re.compile(r"^[\w./-]+$")
# Words that stand for a name the reader chooses (resources/models/NAME.md, tests/data/CASE...).
PLACEHOLDER = re.compile(r"\b(?:NAME|CASE|DIR|FILE|MODEL|KIND|N|X)\b|[*…<>{}$]|\.\.\.")


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8").split("\0") if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not x.startswith(".") and not (rel == "." and x.startswith("build"))]
        for n in names:
            files.append(os.path.normpath(os.path.join(rel, n)).replace(os.sep, "/"))
    return files


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def escapes(rel_file, climb, rest):
    """Does `climb` (../ repeated) + rest, read from rel_file's folder, leave the repository?"""
    depth = rel_file.count("/")
    return climb.count("../") > depth


def resolve(rel_file, target):
    """target relative to rel_file's folder, as a repository path (None if it leaves the repository)."""
    base = os.path.dirname(rel_file)
    p = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
    if p == ".." or p.startswith("../"):
        return None
    return p


class Repo:
    def __init__(self, root, files):
        self.root = root
        self.files = set(files)
        self.dirs = set()
        for f in files:
            parts = f.split("/")
            for i in range(1, len(parts)):
                self.dirs.add("/".join(parts[:i]))
        self.top = {f.split("/")[0] for f in files if "/" in f}

    def exists(self, p):
        p = p.rstrip("/")
        return p in self.files or p in self.dirs


def check_line(repo, rel, line, markdown):
    """Findings (strings) for one line of the file `rel`."""
    found = []
    for m in MACHINE_PATH.finditer(line):
        found.append("%s: an absolute path on a development machine" % m.group(0))
    for m in REFERENCE_COPY.finditer(line):
        found.append("%s: a private copy of a tutorial; cite the tutorial by its public name "
                     "(docs/tutorials.md)" % m.group(0))
    for m in CLIMBING.finditer(line):
        climb, rest = m.group(1), m.group(2)
        if escapes(rel, climb, rest):
            found.append("%s%s: a path outside the repository" % (climb, rest))
        elif markdown and rest.split("/")[0] == "shared":
            found.append("%s%s: a folder beside the repository, not in it" % (climb, rest))
    if not markdown:
        return found
    targets = [(m.group(1), "link") for m in MD_LINK.finditer(line)]
    targets += [(m.group(1), "image") for m in MD_IMG_TAG.finditer(line)]
    for target, what in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor in the same page
        path = target.split("#")[0].split("?")[0]
        if not path:
            continue
        p = resolve(rel, path) if not path.startswith("/") else path.lstrip("/")
        if p is None:
            found.append("%s: a %s outside the repository" % (target, what))
        elif not repo.exists(p):
            found.append("%s: a %s to %s, which is not in the repository" % (target, what, p))
    for m in MD_CODE.finditer(line):
        span = m.group(1).strip().rstrip(".,:;")
        for word in span.split():
            word = word.rstrip(".,:;)").lstrip("(")
            if "/" not in word or not PATH_CHARS.match(word) or PLACEHOLDER.search(word):
                continue
            if word.split("/")[0] not in repo.top or word.startswith("build/"):
                continue
            if not repo.exists(word):
                found.append("%s: named as a repository path, but not in the repository" % word)
    return found


def check(root):
    files = tracked_files(root)
    repo = Repo(root, files)
    findings = []
    for rel in sorted(files):
        if rel.startswith(SKIP_PREFIXES) or rel in SKIP_FILES:
            continue
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        text = read_text(path)
        if text is None:
            continue
        markdown = rel.endswith(".md")
        fenced = False
        for n, line in enumerate(text.splitlines(), 1):
            if markdown and line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            # Inside a fenced block of Markdown only the machine-path and tutorial-copy rules apply
            # (a shell session may well cd ..).
            for f in check_line(repo, rel, line, markdown and not fenced):
                findings.append("%s:%d: %s" % (rel, n, f))
    return findings


def self_test():
    """Every made-up bad line is flagged and every good one passes, so the check can fail."""
    files = ["README.md", "docs/guide.md", "docs/images/tour-1.png", "tools/stio.py", "core/arch/bundled.cpp",
             "tests/x.cmake", "cmake/CudaArchitectures.cmake"]
    repo = Repo("/nonexistent", files)
    bad = [
        ("README.md", "The math follows the tutorials in `../shared/reference` exactly.", True),
        ("docs/guide.md", "Where attnviz departs from ../shared/design.md, and why", True),
        ("tools/stio.py", "# see shared/reference/003_*.txt", False),
        ("tools/stio.py", "# from 000_10002fa920b8d30e.txt", False),
        ("core/arch/bundled.cpp", "const char* p = \"/work/main/resources\";", False),
        ("core/arch/bundled.cpp", "#include \"../../../outside.h\"", False),
        ("README.md", "See [the guide](docs/missing.md).", True),
        ("docs/guide.md", "![tour](images/tour-9.png)", True),
        ("docs/guide.md", "![up](../../etc/passwd)", True),
        ("docs/guide.md", "Run `tools/no_such_script.py` first.", True),
        ("docs/guide.md", "<img src=\"images/none.png\" width=300>", True),
    ]
    good = [
        ("README.md", "See [the guide](docs/guide.md#tour) and https://pytorch.org/tutorials/.", True),
        ("docs/guide.md", "![tour](images/tour-1.png) from `tools/stio.py`, `resources/models/NAME.md`", True),
        ("core/arch/bundled.cpp", "dirs.push_back(exe / \"../share/attnviz/models\");", False),
        ("tests/x.cmake", "include(${CMAKE_CURRENT_LIST_DIR}/../cmake/CudaArchitectures.cmake)", False),
        ("docs/guide.md", "the tutorial's `5-1.Transformer/Transformer.py` and `build/app/attnviz-cli`", True),
        ("docs/guide.md", "[PyTorch's tutorial](https://pytorch.org/tutorials/beginner/translation_transformer.html)", True),
    ]
    failures = []
    for rel, line, md in bad:
        if not check_line(repo, rel, line, md):
            failures.append("not flagged: %s: %s" % (rel, line))
    for rel, line, md in good:
        f = check_line(repo, rel, line, md)
        if f:
            failures.append("flagged wrongly: %s: %s (%s)" % (rel, line, "; ".join(f)))
    for f in failures:
        print(f)
    print("self-test: %d bad lines flagged, %d good lines passed, %d failures"
          % (len(bad), len(good), len(failures)))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    findings = check(args.root)
    for f in findings:
        print(f)
    if findings:
        print("%d reference(s) to places outside the repository (see tools/check_self_contained.py)"
              % len(findings))
        return 1
    print("the repository stands alone: no tracked file points outside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
