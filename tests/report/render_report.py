#!/usr/bin/env python3
"""Renders a batch's report.html in headless Chromium and checks what a reader would see.

Run by CTest (report_render) with ROAM_BINARY, ROAM_SOURCE_DIR and ROAM_CHROMIUM set. Checks:
the page renders to a PNG that is not blank, the rendered DOM holds the summary table with one
row per run, every SVG written parses as XML, and each layout picture holds one rectangle per
(aggregated) buffer, with the aggregates' counts adding up to the plan's buffers.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
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


def chromium(binary, profile, *args):
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--disable-extensions", "--hide-scrollbars",
               "--user-data-dir=" + profile] + list(args)
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish within 120 s: " + " ".join(command))


def main():
    roam = os.environ["ROAM_BINARY"]
    source = os.environ["ROAM_SOURCE_DIR"]
    browser = os.environ.get("ROAM_CHROMIUM", "")
    if not browser or not os.path.exists(browser):
        fail("chromium not found (%r); run scripts/install-deps.sh" % browser)
    with tempfile.TemporaryDirectory(prefix="roam_report_") as tmp:
        out = os.path.join(tmp, "out")
        inputs = [os.path.join(source, "tests/data/tiny.graph.json"),
                  os.path.join(source, "configs/alexnet.yaml")]
        run = subprocess.run([roam, "batch", *inputs, "--mode", "heuristic", "--quiet", "-o", out],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            fail("roam batch exited %d: %s" % (run.returncode, run.stderr))
        report = os.path.join(out, "report.html")
        url = "file://" + report

        png = os.path.join(tmp, "report.png")
        shot = chromium(browser, os.path.join(tmp, "profile1"), "--window-size=1280,1600",
                        "--screenshot=" + png, url)
        if not os.path.exists(png):
            fail("chromium wrote no screenshot (exit %d): %s" % (shot.returncode, shot.stderr))
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

        dom = chromium(browser, os.path.join(tmp, "profile2"), "--dump-dom", url).stdout
        if '<table id="summary">' not in dom:
            fail("the rendered page has no summary table")
        table = dom[dom.index('<table id="summary">'):dom.index("</table>")]
        if table.count("<tr") != 1 + len(inputs):
            fail("the summary table has %d rows, expected %d" % (table.count("<tr"), 1 + len(inputs)))
        if "alexnet" not in table or "tiny" not in table:
            fail("the summary table does not name the runs")
        if dom.count("<svg") < 2 * len(inputs):
            fail("the page inlines %d pictures, expected %d" % (dom.count("<svg"), 2 * len(inputs)))

        plots = os.path.join(out, "plots")
        for name in sorted(os.listdir(plots)):
            root = ET.parse(os.path.join(plots, name)).getroot()  # raises on malformed XML
            if root.tag != SVG + "svg":
                fail(name + ": root element is " + root.tag)
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
        print("report_render: ok (%dx%d screenshot, %d colours)" % (width, height, len(colours)))


if __name__ == "__main__":
    main()
