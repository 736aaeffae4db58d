#!/usr/bin/env python3
"""Checks the interface's translations (resources/translations/*.ts).

usage: check_translations.py LUPDATE SOURCE_DIR TS... [--complete]

Fails (exit 1) when
  - a .ts is not well-formed XML or its messages lack a source or a translation element;
  - a finished translation drops or adds a placeholder of its source (%1 … %99, %n, %L1) or an
    HTML tag (<b>, </p>, <br> …): the .arg() calls and the markup need every one of them;
  - a .ts is not current: lupdate, run over app/gui into a copy, finds a source text that the .ts
    lacks (run `ninja -C build update_translations`, then translate the new strings);
  - app/gui builds a user-visible sentence lupdate cannot see: QStringLiteral("Capitalised
    words …") or QStringLiteral("%1 lower-case words") outside the command line's shell/main.cpp
    (write tr("…") with %1 placeholders; text the model reads says `// i18n: model input`);
  - with --complete: any message is unfinished or empty.
It prints how many messages each .ts has translated.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

PLACEHOLDER = re.compile(r"%L?(?:[1-9][0-9]?|n)")
TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b[^>]*>")


def messages(path):
    """(context, source, translation texts, unfinished) for every message of the .ts."""
    root = ET.parse(path).getroot()
    if root.tag != "TS":
        raise ValueError(f"{path}: the root element is <{root.tag}>, not <TS>")
    out = []
    for ctx in root.iter("context"):
        name = ctx.findtext("name") or ""
        for m in ctx.iter("message"):
            src = m.find("source")
            tr = m.find("translation")
            if src is None or tr is None:
                raise ValueError(f"{path}: a message of {name} has no source or translation")
            forms = [f.text or "" for f in tr.iter("numerusform")] or [tr.text or ""]
            unfinished = tr.get("type") in ("unfinished", "vanished", "obsolete")
            out.append((name, src.text or "", forms, unfinished))
    return out


def multiset(regex, text, group=0):
    found = sorted(m.group(group) for m in regex.finditer(text))
    return found


def check_ts(path, complete):
    problems = []
    msgs = messages(path)
    done = 0
    for ctx, src, forms, unfinished in msgs:
        if unfinished or not any(forms):
            if complete:
                problems.append(f"{path}: untranslated in {ctx}: {src!r}")
            continue
        done += 1
        for form in forms:
            if multiset(PLACEHOLDER, src) != multiset(PLACEHOLDER, form):
                problems.append(f"{path}: placeholders differ in {ctx}: {src!r} -> {form!r}")
            if multiset(TAG, src, 1) != multiset(TAG, form, 1):
                problems.append(f"{path}: HTML tags differ in {ctx}: {src!r} -> {form!r}")
    print(f"{os.path.basename(path)}: {done} of {len(msgs)} messages translated")
    return problems, {(c, s) for c, s, _, _ in msgs}


def check_current(lupdate, source_dir, ts, known):
    """Runs lupdate over app/gui into a copy of `ts`; every source text it finds must be known."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(ts))
        shutil.copy(ts, copy)
        # app/gui and the core's texts that go through base/translate.h (app/gui/CMakeLists.txt)
        sources = [os.path.join(source_dir, "app", "gui"),
                   os.path.join(source_dir, "core", "model", "explanations.cpp")]
        r = subprocess.run([lupdate, "-silent", "-locations", "none", "-extensions", "cpp,h",
                            *sources, "-ts", copy], capture_output=True, text=True)
        if r.returncode != 0:
            return [f"lupdate failed ({r.returncode}): {r.stderr.strip()}"]
        found = {(c, s) for c, s, _, _ in messages(copy)}
    return [f"{ts}: not current, lupdate finds a new string in {c}: {s!r} "
            "(run `ninja -C build update_translations`)" for c, s in sorted(found - known)]


def check_unseen(source_dir):
    problems = []
    literal = re.compile(r'QStringLiteral\("([A-Z][a-z]+[ ,:][^"]*[a-z]{2}[^"]*)"\)')
    # a lower-case phrase ("%1 → %2 tokens", "could not write %1"); markup and style sheets aside,
    # and a line that says `// i18n: model input` (text the model reads, not the user)
    phrase = re.compile(r'QStringLiteral\("([^"<{]*(?:%[0-9] |[a-z]{2,} )[a-z]{3,}[^"]*)"\)')
    gui = os.path.join(source_dir, "app", "gui")
    for folder, _, files in os.walk(gui):
        for f in files:
            path = os.path.join(folder, f)
            if not f.endswith((".cpp", ".h")) or path.endswith(os.path.join("shell", "main.cpp")):
                continue
            with open(path, encoding="utf-8") as fh:
                for n, line in enumerate(fh, 1):
                    if line.lstrip().startswith("//"):
                        continue
                    found = list(literal.finditer(line))
                    if "i18n: model input" not in line:
                        found += [m for m in phrase.finditer(line)
                                  if not re.search(r"(margin|border|background|font-family):", m.group(1))]
                    for m in {m.start(): m for m in found}.values():
                        problems.append(f"{os.path.relpath(path, source_dir)}:{n}: "
                                        f"a sentence lupdate cannot see: {m.group(1)!r} (use tr())")
    return problems


def main(argv):
    complete = "--complete" in argv
    args = [a for a in argv if a != "--complete"]
    if len(args) < 3:
        print(__doc__)
        return 2
    lupdate, source_dir, ts_files = args[0], args[1], args[2:]
    problems = []
    for ts in ts_files:
        try:
            found, known = check_ts(ts, complete)
        except (ET.ParseError, ValueError) as e:
            problems.append(f"{ts}: {e}")
            continue
        problems += found
        problems += check_current(lupdate, source_dir, ts, known)
    problems += check_unseen(source_dir)
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
