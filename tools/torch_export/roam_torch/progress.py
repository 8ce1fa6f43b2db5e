"""Progress lines on stderr for long exports and runs, only when stderr is a terminal (logs,
pipes and tests stay clean). One line, rewritten in place with a carriage return."""

import sys
import time

_INTERVAL_S = 0.5  # at most two updates a second


def enabled():
    return sys.stderr.isatty()


def say(message):
    if enabled():
        sys.stderr.write(f"\rroam_torch: {message}\x1b[K\n")
        sys.stderr.flush()


class Counter:
    """'N label' (or 'N/total label'), rewritten at most twice a second; close() prints the
    final count on its own line. Does nothing unless stderr is a terminal."""

    def __init__(self, label, total=None):
        self.label, self.total, self.count = label, total, 0
        self.on = enabled()
        self.shown = 0.0

    def tick(self, n=1):
        self.count += n
        if self.on:
            now = time.monotonic()
            if now - self.shown >= _INTERVAL_S:
                self.shown = now
                self._write("")

    def close(self):
        if self.on:
            self._write("\n")

    def _write(self, end):
        of = f"/{self.total}" if self.total is not None else ""
        sys.stderr.write(f"\rroam_torch: {self.count}{of} {self.label}\x1b[K{end}")
        sys.stderr.flush()


def step_done(k, loss):
    if enabled():
        sys.stderr.write(f"\rroam_torch: step {k} done, loss {loss:.6g}\x1b[K\n")
        sys.stderr.flush()
