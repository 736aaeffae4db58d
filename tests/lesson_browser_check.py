#!/usr/bin/env python3
"""The exported lesson page (attnviz-cli export-html) in a real browser: Debian's chromium,
headless, driven through chromium-driver by Selenium (python3-selenium).

Checks, on the bundled reorder model:
- the page loads with no console message of level error and no network request (the browser's own
  performance log of the Network domain, and the page's resource timing);
- hovering cells of the heatmap it opens on (a real pointer move) shows the query, the key and the
  probability that `attnviz-cli run --dump` wrote into cross_probs.npy, to the precision the page
  states, and the raw score to binary16's; a masked cell of decoder self-attention says so and
  shows 0; the mean of the heads equals the mean of the dump's heads;
- the decoding slider steps the decoding: each step's top-k next tokens are the softmax of
  logits.npy's row, and the new cross-attention row is that row of the dump;
- an 8-bit page agrees with the dump to its own stated precision;
- the title names the model and the sentence; masked cells are grey as in the application; at a
  phone's width every tab is whole;
- screenshots of the Attention and Decoding views (and the page at a phone's width) are saved in
  OUT_DIR;
- pages of a decoder-only (GPT-like) and an encoder-only (BERT-like) model of tests/data load and
  draw every view they have with no console error.

usage: lesson_browser_check.py ATTNVIZ_CLI OUT_DIR SOURCE_DIR
Exit 77 (skipped) only when chromium, chromium-driver or python3-selenium is not installed
(scripts/install-deps.sh --tests installs them); a failure instead when ATTNVIZ_REQUIRE_BROWSER=1
(the test command's build, -DATTNVIZ_REQUIRE_TORCH=ON, sets it).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

# Skipped only where the test command does not require the browser.
SKIP = 1 if os.environ.get("ATTNVIZ_REQUIRE_BROWSER") == "1" else 77
MODEL = "reorder"
SOURCE = "the big dog sees a small cat"
# The view the page is to open on: cross-attention, layer 2, head 3 (counted from 1).
LAYER, HEAD = 2, 3


def find(*names):
    for n in names:
        p = shutil.which(n) or (n if os.path.exists(n) else None)
        if p:
            return p
    return None


def main():
    cli, out, source_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    chromium = find("/usr/lib/chromium/chromium", "chromium", "chromium-browser")
    driver_path = find("chromedriver", "/usr/lib/chromium/chromedriver")
    try:
        from selenium import webdriver  # noqa: F401
    except ImportError:
        print("python3-selenium is not installed (scripts/install-deps.sh --tests installs it): skipped")
        return SKIP
    if not chromium or not driver_path:
        print("chromium or chromium-driver is not installed (scripts/install-deps.sh --tests "
              "installs them): skipped")
        return SKIP
    import numpy as np

    os.makedirs(out, exist_ok=True)
    dump = os.path.join(out, "dump")
    page16 = os.path.join(out, "lesson.html")
    page8 = os.path.join(out, "lesson-8bit.html")
    subprocess.run([cli, "run", MODEL, "--src", SOURCE, "--dump", dump], check=True, timeout=120)
    start = ["--view", "attention", "--kind", "cross", "--layer", str(LAYER), "--head", str(HEAD)]
    subprocess.run([cli, "export-html", MODEL, "--src", SOURCE, page16] + start, check=True,
                   timeout=120)
    subprocess.run([cli, "export-html", MODEL, "--src", SOURCE, page8, "--bits", "8"] + start,
                   check=True, timeout=120)
    cross = np.load(os.path.join(dump, "cross_probs.npy"))  # [L, H, T, S]
    cross_scores = np.load(os.path.join(dump, "cross_scores.npy"))
    dec_mask = np.load(os.path.join(dump, "dec_self_mask.npy"))  # [L, H, T, T]
    logits = np.load(os.path.join(dump, "logits.npy")).astype(np.float64)  # [T, V]
    tokens = json.load(open(os.path.join(dump, "tokens.json")))
    src_tokens, tgt_tokens = tokens["src_tokens"][0], tokens["tgt_tokens"][0]  # one sentence

    driver = browser(chromium, driver_path, out)
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    try:
        for page, bits in ((page16, 16), (page8, 8)):
            load(driver, page)
            data = driver.execute_script(
                "return JSON.parse(document.getElementById('lesson-data').textContent).precision")
            check(data["bits"] == bits, f"{bits}-bit page states {data['bits']} bits")
            # A shown value is within the stated error of the stored one, then rounded to
            # `decimals` for display: both bounds together.
            tolerance = data["max_error"] + 0.5 * 10 ** -data["decimals"] + 1e-9
            check(driver.title == f"Attention in {MODEL}: “{SOURCE}”", f"the title: {driver.title!r}")
            state = driver.execute_script("return window.attnvizLesson.state")
            check(state["kind"] == "cross" and state["layer"] == LAYER - 1 and
                  state["head"] == HEAD - 1, f"opens on the teacher's selection: {state}")
            T, S = cross.shape[2], cross.shape[3]
            ref = cross[LAYER - 1, HEAD - 1]
            cells = {(T - 1, S - 1), (0, 0), (T // 2, S // 3)}
            i_max, j_max = np.unravel_index(np.argmax(ref), ref.shape)
            cells.add((int(i_max), int(j_max)))
            for i, j in sorted(cells):
                text, prob = hover(driver, i, j)
                check(f"query {i + 1} “{tgt_tokens[i]}”" in text and
                      f"key {j + 1} “{src_tokens[j]}”" in text,
                      f"{bits} bits: hover ({i}, {j}) names query and key: {text!r}")
                check(abs(prob - ref[i, j]) <= tolerance,
                      f"{bits} bits: hover ({i}, {j}) probability {prob} vs the dump's "
                      f"{ref[i, j]:.7f} (±{tolerance:.2g})")
                if bits == 16:
                    s = float(re.search(r"raw score (\S+)", text).group(1).replace("−", "-"))
                    r = float(cross_scores[LAYER - 1, HEAD - 1, i, j])
                    check(abs(s - r) <= abs(r) * 2 ** -11 + 0.0005 + 1e-9,  # binary16, then 3 decimals
                          f"hover ({i}, {j}) raw score {s} vs the dump's {r:.5f}")
            # The mean of the heads.
            select(driver, "head", "-1")
            mean = cross[LAYER - 1].mean(axis=0)
            for i, j in sorted(cells):
                _, prob = hover(driver, i, j)
                check(abs(prob - mean[i, j]) <= tolerance + 1e-6,
                      f"{bits} bits: mean of the heads at ({i}, {j}): {prob} vs {mean[i, j]:.7f}")
            if bits == 8:
                continue
            # A masked cell of decoder self-attention: the future of the first query.
            select(driver, "kind", "dec_self")
            select(driver, "layer", "0")
            select(driver, "head", "0")
            check(bool(dec_mask[0, 0, 0, 1]), "the dump masks (0, 1) of decoder self-attention")
            text, prob = hover(driver, 0, 1)
            check("masked" in text and "not masked" not in text and prob == 0,
                  f"masked cell hovered: {text!r}")
            text, _ = hover(driver, 1, 0)
            check("not masked" in text, f"unmasked cell hovered: {text!r}")
            # Drawn as the application draws masked cells: grey fill and grey hatch, no colour of
            # the map (a few pixels of the cell, on and between the hatch's lines).
            px = driver.execute_script("""
                const canvas = document.getElementById('heatmap');
                const c = window.attnvizLesson.cellCenter(0, 1), r = canvas.getBoundingClientRect();
                const sx = canvas.width / r.width, sy = canvas.height / r.height;
                const g = canvas.getContext('2d'), out = [];
                for (const [dx, dy] of [[-3, -3], [0, 0], [2, 1], [-1, 3], [3, -2]]) {
                  const x = Math.round((c.x - r.left + dx) * sx), y = Math.round((c.y - r.top + dy) * sy);
                  const d = g.getImageData(x, y, 1, 1).data;
                  out.push([d[0], d[1], d[2]]);
                }
                return out;""")
            check(all(max(p) - min(p) <= 6 and min(p) >= 0x80 for p in px),
                  f"the masked cell is grey, as in the application: {px}")
            # Back to the teacher's view for the screenshot.
            select(driver, "kind", "cross")
            select(driver, "layer", str(LAYER - 1))
            select(driver, "head", str(HEAD - 1))
            driver.execute_script("window.scrollTo(0, 0)")
            hover(driver, int(i_max), int(j_max))
            driver.save_screenshot(os.path.join(out, "lesson-attention.png"))
            # The overview opens a head on click.
            driver.find_element("css selector", "#tabs button[data-view=overview]").click()
            thumbs = driver.find_elements("css selector", ".thumb")
            L, H = cross.shape[0], cross.shape[1]
            check(len(thumbs) == L * (H + 1), f"overview: {len(thumbs)} thumbnails for {L}×{H} + means")
            driver.save_screenshot(os.path.join(out, "lesson-overview.png"))
            thumbs[1].click()
            state = driver.execute_script("return window.attnvizLesson.state")
            check(state["view"] == "attention" and state["layer"] == 0 and state["head"] == 1,
                  f"clicking the second thumbnail opens layer 1 head 2: {state}")
            # The decoding steps.
            select(driver, "layer", str(LAYER - 1))
            select(driver, "head", str(HEAD - 1))
            driver.find_element("css selector", "#tabs button[data-view=decoding]").click()
            slider = driver.find_element("id", "step")
            steps = int(slider.get_attribute("max")) + 1
            check(steps == T, f"the slider has {steps} steps, the target {T} positions")
            from selenium.webdriver.common.keys import Keys
            slider.click()
            slider.send_keys(Keys.HOME)
            for step in range(T):
                label = driver.find_element("id", "step-label").text
                check(label.startswith(f"step {step + 1} of {T}"), f"slider at step {step + 1}: {label!r}")
                bars = driver.find_elements("css selector", "#top-k .bar-row")
                p = np.exp(logits[step] - logits[step].max())
                p /= p.sum()
                best = np.argsort(-p)[:len(bars)]
                shown = [float(b.find_element("css selector", ".value").text.replace("−", "-"))
                     for b in bars]
                check(all(abs(a - p[k]) <= 0.5e-4 + 1e-7 for a, k in zip(shown, best)),
                      f"step {step + 1}: top-k {shown} vs softmax(logits) {[round(p[k], 5) for k in best]}")
                if step == T // 2:
                    driver.save_screenshot(os.path.join(out, "lesson-decoding.png"))
                # The new row: the chosen head's cell (layer, head) at key 0.
                row_index = (LAYER - 1) * (H + 1) + (HEAD - 1)
                text, prob = hover_rows(driver, row_index, 0)
                check(abs(prob - cross[LAYER - 1, HEAD - 1, step, 0]) <= tolerance,
                      f"step {step + 1}: new row of layer {LAYER} head {HEAD} at key 1: {prob} vs "
                      f"{cross[LAYER - 1, HEAD - 1, step, 0]:.6f}")
                slider.send_keys(Keys.ARROW_RIGHT)
            # Nothing went wrong and nothing was fetched, over everything above.
            logs = driver.get_log("browser")
            errors = [e for e in logs if e.get("level") == "SEVERE"]
            check(not errors, f"no console errors: {errors}")
            requests = []
            for entry in driver.get_log("performance"):
                m = json.loads(entry["message"])["message"]
                if m.get("method") == "Network.requestWillBeSent":
                    url = m["params"]["request"]["url"]
                    if url != "file://" + os.path.abspath(page):
                        requests.append(url)
            check(not requests, f"no network requests: {requests}")
            resources = driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)")
            check(not resources, f"the page fetched no resource: {resources}")
        # A phone's width: every tab whole, inside the page, its word not cut.
        driver.set_window_size(390, 844)
        load(driver, page16)
        tabs = driver.execute_script(
            "return [...document.querySelectorAll('#tabs button')].map(b => ({r: "
            "b.getBoundingClientRect().toJSON(), cut: b.scrollWidth > b.clientWidth}))")
        width = driver.execute_script("return document.documentElement.clientWidth")
        check(len(tabs) == 4 and all(t["r"]["left"] >= 0 and t["r"]["right"] <= width + 0.5 and
                                     not t["cut"] for t in tabs),
              f"at a phone's width ({width} px) every tab is whole: "
              f"{[(round(t['r']['left']), round(t['r']['right']), t['cut']) for t in tabs]}")
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        check(overflow <= 0, f"at a phone's width nothing is wider than the page ({overflow} px over)")
        driver.save_screenshot(os.path.join(out, "lesson-phone.png"))
        driver.set_window_size(1280, 1000)
        # The other architectures: a decoder-only model (decoding the prompt's positions) and an
        # encoder-only one (no decoding view), every view drawn.
        for name, args, views in (
                ("gpt003", ["--tgt-ids", "1,5,9,3,7"], ["attention", "overview", "masks", "decoding"]),
                ("bert003", ["--src-ids", "1,5,9,3,7"], ["attention", "overview", "masks"])):
            page = os.path.join(out, name + ".html")
            model = os.path.join(source_dir, "tests", "data", name + ".safetensors")
            subprocess.run([cli, "export-html", model, page] + args, check=True, timeout=120)
            load(driver, page)
            for view in views:
                driver.find_element("css selector", f"#tabs button[data-view={view}]").click()
                state = driver.execute_script("return window.attnvizLesson.state")
                check(state["view"] == view, f"{name}: the {view} view opens")
            decoding = driver.find_element("css selector", "#tabs button[data-view=decoding]")
            check(decoding.is_enabled() == ("decoding" in views),
                  f"{name}: the decoding view is {'there' if 'decoding' in views else 'disabled'}")
            driver.find_element("css selector", "#tabs button[data-view=attention]").click()
            text, _ = hover(driver, 0, 0)
            check(text.startswith("query 1"), f"{name}: hover shows a cell: {text!r}")
            errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            check(not errors, f"{name}: no console errors: {errors}")
    finally:
        driver.quit()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed; screenshots in", out)
    return 0


def browser(chromium, driver_path, out):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,1000", "--force-device-scale-factor=1",
                "--no-first-run", "--disable-extensions", "--disable-background-networking",
                "--user-data-dir=" + os.path.join(out, "profile")):
        options.add_argument(arg)
    # Chromium refuses to start as root with its sandbox, and in containers without user
    # namespaces as anyone: the page is our own file, opened in a throwaway profile.
    options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path, log_path=os.path.join(out, "chromedriver.log")),
                              options=options)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(30)
    return driver


def load(driver, path):
    # The browser's own start page (chrome://new-tab-page …) fills the logs first: empty them.
    driver.get("about:blank")
    driver.get_log("browser")
    driver.get_log("performance")
    driver.get("file://" + os.path.abspath(path))
    deadline = time.time() + 30
    while driver.execute_script("return document.body.dataset.ready") != "true":
        if time.time() > deadline:
            raise RuntimeError("the page never finished drawing: " + repr(driver.get_log("browser")))
        time.sleep(0.1)


def select(driver, id, value):
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("id", id)).select_by_value(value)


def _hover_canvas(driver, canvas_id, x, y):
    """Moves the pointer to (x, y) client pixels over a canvas, as a user does; returns the
    tooltip's text and the probability it shows."""
    from selenium.webdriver.common.action_chains import ActionChains
    canvas = driver.find_element("id", canvas_id)
    driver.execute_script("arguments[0].scrollIntoView({block: 'nearest'})", canvas)
    rect = driver.execute_script("return arguments[0].getBoundingClientRect().toJSON()", canvas)
    x, y = driver.execute_script(x, canvas) if isinstance(x, str) else (x, y)
    dx = round(x - (rect["left"] + rect["width"] / 2))
    dy = round(y - (rect["top"] + rect["height"] / 2))
    ActionChains(driver).move_to_element_with_offset(canvas, dx, dy).perform()
    tooltip = driver.find_element("id", "tooltip")
    text = tooltip.text
    m = re.search(r"probability (\S+)", text)
    if not tooltip.is_displayed() or not m:
        raise RuntimeError(f"no tooltip at ({x}, {y}) of #{canvas_id}: {text!r}")
    return text.replace("\n", " "), float(m.group(1).replace("−", "-"))


def hover(driver, i, j):
    """Hovers cell (query i, key j) of the heatmap on screen."""
    return _hover_canvas(driver, "heatmap",
                         f"const c = window.attnvizLesson.cellCenter({i}, {j}); return [c.x, c.y];", None)


def hover_rows(driver, r, j):
    """Hovers cell (row r, key j) of the decoding view's new rows."""
    return _hover_canvas(driver, "step-rows",
                         f"const c = window.attnvizLesson.rowCellCenter({r}, {j}); return [c.x, c.y];",
                         None)


if __name__ == "__main__":
    sys.exit(main())
