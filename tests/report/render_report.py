#!/usr/bin/env python3
"""Renders roam's reports and pictures in headless Chromium and checks what a reader would see.

Run by CTest (report_render) with ROAM_BINARY, ROAM_SOURCE_DIR and ROAM_CHROMIUM set. Runs a small
batch, a small bench sweep (the mode and the batch size swept), `roam remat --sweep --svg` and
`roam plot`, then checks:
- the batch's page renders to a PNG that is not blank, its rendered DOM holds the summary table
  with one row per run and the pictures, every SVG parses as XML, and each layout picture holds
  one rectangle per (aggregated) buffer, the aggregates' counts adding up to the plan's buffers;
- the layout boxes the browser computed (a script added to a copy of each page measures them):
  every text and legend swatch lies inside its picture, no two texts overlap, no picture is wider
  than the page;
- every y axis is labelled at round steps of its unit (a 1, 2 or 5 step: never 1.95 / 2.93 GiB);
- each memory picture draws the total peaks of the results table (fragmentation included);
- the sweep charts are bars with one colour per method, not lines.
"""
import html as html_module
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"


def fail(message):
    print("report_render: FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def decode_png(path):
    """Returns (width, height, channels, rows of bytes) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if depth != 8 or colour not in (2, 6):
                fail("unexpected PNG depth %d / colour type %d" % (depth, colour))
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def chromium_command(binary, profile, *args):
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--disable-extensions", "--hide-scrollbars",
            "--user-data-dir=" + profile] + list(args)


def chromium(binary, profile, *args):
    command = chromium_command(binary, profile, *args)
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish within 120 s: " + " ".join(command))


# Added to a copy of a page: measures every picture's texts as laid out and writes what is wrong
# into the DOM, which --dump-dom then returns.
CHECK_SCRIPT = r"""
<script>
(function () {
  const problems = [];
  const page = document.documentElement.clientWidth;
  const svgs = [...document.querySelectorAll("svg")].filter(s => !s.parentElement.closest("svg"));
  let texts = 0;
  svgs.forEach((svg, i) => {
    const fig = svg.closest("figure");
    const name = (fig && fig.querySelector("figcaption") ? fig.querySelector("figcaption").textContent : "picture " + i);
    const box = svg.getBoundingClientRect();
    if (box.width < 50 || box.height < 50) problems.push(name + ": drawn " + box.width + " x " + box.height);
    if (box.left < -0.5 || box.right > page + 0.5)
      problems.push(name + ": " + Math.round(box.width) + " px wide on a " + page + " px page");
    const inside = r => r.left >= box.left - 0.5 && r.right <= box.right + 0.5 &&
                        r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
    const items = [];
    svg.querySelectorAll("text").forEach(t => {
      const r = t.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return;
      ++texts;
      items.push({r, s: t.textContent});
      if (!inside(r)) problems.push(name + ": text '" + t.textContent + "' leaves the picture");
    });
    svg.querySelectorAll(".legend").forEach(e => {
      if (!inside(e.getBoundingClientRect())) problems.push(name + ": a legend swatch leaves the picture");
    });
    // Overlap in screen pixels, allowing one pixel of the fonts' ascent and descent to touch.
    const scale = box.width / svg.viewBox.baseVal.width;
    for (let a = 0; a < items.length; ++a)
      for (let b = a + 1; b < items.length; ++b) {
        const p = items[a].r, q = items[b].r;
        const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > 1 * scale && h > 1 * scale)
          problems.push(name + ": '" + items[a].s + "' overlaps '" + items[b].s + "'");
      }
  });
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify({pictures: svgs.length, texts, problems});
  document.body.appendChild(out);
})();
</script>
"""


def layout_check(browser, profile, page, tmp):
    """Loads a copy of `page` with CHECK_SCRIPT in a 1280 px wide window; returns the DOM and the
    script's findings."""
    html = open(page).read()
    copy = os.path.join(tmp, os.path.basename(os.path.dirname(page)) + "-" + os.path.basename(page) + ".check.html")
    with open(copy, "w") as f:
        f.write(html.replace("</body>", CHECK_SCRIPT + "</body>"))
    dom = chromium(browser, profile, "--window-size=1280,1600", "--dump-dom", "file://" + copy).stdout
    match = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S)
    if not match:
        fail(page + ": the layout check did not run (no result in the DOM)")
    return dom, json.loads(html_module.unescape(match.group(1)))


Y_TICK = re.compile(r"^(-?\d+(?:\.\d+)?)(?: (B|KiB|MiB|GiB|TiB|PiB))?$")


def check_y_ticks(name, root):
    """The y tick labels (class tick, anchored at their end) of each axis are 0, s, 2s, ... with s
    a 1, 2 or 5 step of the unit they are written in."""
    labels = [t.text for t in root.iter(SVG + "text")
              if t.get("class") == "tick" and t.get("text-anchor") == "end"]
    if not labels:
        return 0
    axes, current = [], []
    for text in labels:  # each axis starts again from 0
        m = Y_TICK.match(text)
        if not m:
            fail("%s: y tick label %r is not a number and a unit" % (name, text))
        if float(m.group(1)) == 0 and current:
            axes.append(current)
            current = []
        current.append((float(m.group(1)), m.group(2)))
    axes.append(current)
    for axis in axes:
        if len({u for _, u in axis}) != 1:
            fail("%s: one axis mixes units: %s" % (name, axis))
        values = [v for v, _ in axis]
        if len(values) < 2:
            continue
        step = values[1] - values[0]
        mantissa = step / 10 ** math.floor(math.log10(step))
        if min(abs(mantissa - m) for m in (1, 2, 5)) > 1e-6:
            fail("%s: y ticks step by %g (%s): not a 1-2-5 step" % (name, step, axis))
        for i, v in enumerate(values):
            if abs(v - i * step) > 1e-6 * max(1, abs(v)):
                fail("%s: y ticks are not evenly spaced: %s" % (name, axis))
    return len(axes)


def run(args, what):
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        fail("%s exited %d: %s" % (what, r.returncode, r.stderr))
    return r


def main():
    started = time.time()
    roam = os.environ["ROAM_BINARY"]
    source = os.environ["ROAM_SOURCE_DIR"]
    browser = os.environ.get("ROAM_CHROMIUM", "")
    if not browser or not os.path.exists(browser):
        fail("chromium not found (%r); run scripts/install-deps.sh" % browser)
    with tempfile.TemporaryDirectory(prefix="roam_report_") as tmp:
        out = os.path.join(tmp, "out")
        # ViT-B/16: its peak in use sits at the top of the memory picture, under the title.
        inputs = [os.path.join(source, "tests/data/tiny.graph.json"),
                  os.path.join(source, "configs/alexnet.yaml"),
                  os.path.join(source, "configs/vit-b16.yaml")]
        run([roam, "batch", *inputs, "--mode", "heuristic", "--quiet", "-o", out], "roam batch")
        report = os.path.join(out, "report.html")
        url = "file://" + report

        # The screenshot is taken while the other commands run (its own browser and profile).
        png = os.path.join(tmp, "report.png")
        shot = subprocess.Popen(chromium_command(browser, os.path.join(tmp, "profile1"),
                                                 "--window-size=1280,1600", "--screenshot=" + png, url),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        summary = {r["name"]: r for r in json.load(open(os.path.join(out, "summary.json")))["runs"]}
        plots = os.path.join(out, "plots")
        axes = 0
        for name in sorted(os.listdir(plots)):
            root = ET.parse(os.path.join(plots, name)).getroot()  # raises on malformed XML
            if root.tag != SVG + "svg":
                fail(name + ": root element is " + root.tag)
            if "viewBox" not in root.attrib or "max-width:100%" not in root.get("style", ""):
                fail(name + ": the picture does not scale to its container")
            axes += check_y_ticks(name, root)
            if name.endswith(".memory.svg"):
                run_name = name[:-len(".memory.svg")]
                titles = [l.find(SVG + "title").text for l in root.iter(SVG + "line")
                          if l.get("class") == "total-peak"]
                record = summary[run_name]
                for method in ("result", "pytorch", "heuristic"):
                    want = record[method]["total_peak"]
                    if not any(t.endswith(" total peak %d B" % want) for t in titles):
                        fail("%s: no total peak line at the table's %s total peak %d B (lines: %s)"
                             % (name, method, want, titles))
            if not name.endswith(".layout.svg"):
                continue
            rects = [r for r in root.iter(SVG + "rect") if r.get("class", "").startswith("buf")]
            plan = json.load(open(os.path.join(out, "plans", name[:-len(".layout.svg")] + ".plan.json")))
            buffers = len(plan["buffers"])
            if int(root.get("data-rectangles")) != len(rects):
                fail("%s: %d rectangles, data-rectangles says %s" % (name, len(rects), root.get("data-rectangles")))
            if sum(int(r.get("data-count")) for r in rects) != buffers or int(root.get("data-buffers")) != buffers:
                fail("%s: rectangles account for %d buffers, the plan has %d"
                     % (name, sum(int(r.get("data-count")) for r in rects), buffers))
            for r in rects:
                if r.find(SVG + "title") is None:
                    fail(name + ": a rectangle has no hover title")

        # A bench sweep over the mode and the batch size: its charts are grouped bars.
        sweep = os.path.join(tmp, "sweep.yaml")
        with open(sweep, "w") as f:
            f.write("name: render\ninputs: [%s, %s]\nset: [planner.time_limit_s=2]\n"
                    "grid:\n  model.batch: [1, 2]\n  mode: [heuristic, roam]\nrepeats: 1\n"
                    % (os.path.join(source, "configs/alexnet.yaml"),
                       os.path.join(source, "configs/resnet18.yaml")))
        bench = os.path.join(tmp, "bench")
        run([roam, "bench", sweep, "--quiet", "-o", bench], "roam bench")
        for axis in ("mode", "model.batch"):
            for what in ("memory", "time"):
                name = "sweep-%s.%s.svg" % (axis, what)
                root = ET.parse(os.path.join(bench, "plots", name)).getroot()
                if any(True for _ in root.iter(SVG + "polyline")):
                    fail(name + ": drawn as lines")
                bars = [r for r in root.iter(SVG + "rect") if r.get("class") == "bar"]
                swatches = [r.get("fill") for r in root.iter(SVG + "rect") if r.get("class") == "legend"]
                if not bars or len(set(swatches)) != len(swatches):
                    fail("%s: %d bars, legend colours %s" % (name, len(bars), swatches))
        table_md = open(os.path.join(bench, "table.md")).read()
        if "MiB" not in table_md or " s)" not in table_md:
            fail("table.md gives no units:\n" + table_md)
        pictures = [(name, os.path.join(bench, "plots", name))
                    for name in sorted(os.listdir(os.path.join(bench, "plots")))
                    if name.startswith("sweep-")]

        # The other pictures roam draws: remat's trade-off curve and `roam plot`'s two.
        remat_svg = os.path.join(tmp, "remat.svg")
        run([roam, "remat", os.path.join(source, "configs/alexnet.yaml"), "--sweep",
             "--sweep-step", "0.05", "--svg", remat_svg], "roam remat --sweep")
        pictures.append(("remat --sweep --svg", remat_svg))
        vit_plan = os.path.join(out, "plans", "vit-b16.plan.json")
        for what in ("layout", "memory"):
            path = os.path.join(tmp, "plot-%s.svg" % what)
            run([roam, "plot", vit_plan, "--graph", inputs[2], "--what", what, "-o", path],
                "roam plot --what " + what)
            pictures.append(("plot --what " + what, path))
        # One page (one browser start, about 7 s on a loaded machine, beside the screenshot's): the batch's report with
        # every other picture appended in the same kind of figure.
        extra = ""
        for caption, path in pictures:
            axes += check_y_ticks(caption, ET.parse(path).getroot())
            extra += "<figure><figcaption>%s</figcaption>\n%s</figure>\n" % (caption, open(path).read())
        page = os.path.join(tmp, "all.html")
        with open(page, "w") as f:
            f.write(open(report).read().replace("</body>", extra + "</body>"))
        dom, check = layout_check(browser, os.path.join(tmp, "profile2"), page, tmp)
        if '<table id="summary">' not in dom:
            fail("the rendered page has no summary table")
        table = dom[dom.index('<table id="summary">'):dom.index("</table>")]
        if table.count("<tr") != 1 + len(inputs):
            fail("the summary table has %d rows, expected %d" % (table.count("<tr"), 1 + len(inputs)))
        if "alexnet" not in table or "tiny" not in table:
            fail("the summary table does not name the runs")
        if check["pictures"] < 2 * len(inputs) + len(pictures):
            fail("the page inlines %d pictures, expected %d" % (check["pictures"], 2 * len(inputs) + len(pictures)))
        try:
            _, shot_err = shot.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            shot.kill()
            fail("chromium did not take the screenshot within 120 s")
        if not os.path.exists(png):
            fail("chromium wrote no screenshot (exit %d): %s" % (shot.returncode, shot_err))
        width, height, channels, rows = decode_png(png)
        if width < 1000 or height < 1000:
            fail("screenshot is %dx%d" % (width, height))
        colours, inked = set(), 0
        for row in rows[::4]:
            for x in range(0, len(row), channels * 4):
                pixel = row[x:x + 3]
                colours.add(pixel)
                inked += pixel != b"\xff\xff\xff"
        sampled = (height // 4 + 1) * (width // 4 + 1)
        if inked < sampled // 50 or len(colours) < 8:
            fail("the page looks blank: %d of %d sampled pixels inked, %d colours"
                 % (inked, sampled, len(colours)))



        problems = check["problems"]
        if problems:
            fail("%d layout problems:\n  " % len(problems) + "\n  ".join(problems[:40]))
        print("report_render: ok (%dx%d screenshot, %d colours; %d pictures, %d texts laid out; "
              "%d y axes at round steps; %.1f s)"
              % (width, height, len(colours), check["pictures"], check["texts"], axes,
                 time.time() - started))


if __name__ == "__main__":
    main()
