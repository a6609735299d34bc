#!/usr/bin/env python3
"""How long a new reader waits, from a fresh clone: `cargo xtask build`,
then each chapter's run command as the chapter prints it, then `exercise
start` and `check` of three exercises. Prints a Markdown table.

    python3 tools/time_first_run.py [COMMIT] [--keep]

Run by hand, with nothing else running (the times are the machine's):
it clones this repository at COMMIT (default HEAD) into a temporary
directory with its own, empty `target/`, and shares only cargo's download
cache and the installed book tools (`~/.cargo`), as a reader who has
installed Rust and run `cargo xtask serve` once would. A run takes about a
quarter of an hour on two cores. `--keep` leaves the clone in place.

For each command the table gives the seconds to its first line of output
on stdout (the example's first result), the seconds to its end, and
whether cargo compiled anything for it. A chapter's command is the first
`cargo run … --example NAME` it prints, in a `text` block or inline.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

EXERCISES = ["ch02-1", "ch05-3", "ch14-1"]


def timed(command, cwd):
    """Runs `command` (a shell line) in `cwd`: seconds to the first line on
    stdout, seconds to the end, whether cargo compiled anything, and the
    exit status."""
    start = time.monotonic()
    # stderr into a file: a pipe that nobody reads while stdout is read
    # fills up and stops the command.
    with tempfile.TemporaryFile(mode="w+") as errors:
        process = subprocess.Popen(
            command, shell=True, cwd=cwd, stdout=subprocess.PIPE, stderr=errors, text=True
        )
        first = None
        for _ in process.stdout:
            if first is None:
                first = time.monotonic() - start
        status = process.wait()
        errors.seek(0)
        stderr = errors.read()
    total = time.monotonic() - start
    compiled = "Compiling" in stderr or re.search(r"\b[1-9]\d* compiled\b", stderr) is not None
    return first, total, compiled, status


def chapter_commands(clone):
    """Each chapter's run command, as the chapter prints it."""
    commands = []
    book = os.path.join(clone, "book")
    for name in sorted(os.listdir(book)):
        if not (name.startswith("ch") or name == "making-it-fast.md") or not name.endswith(".md"):
            continue
        text = open(os.path.join(book, name), encoding="utf-8").read()
        # The first, in a `text` block or inline in backticks.
        found = re.search(r"(cargo run [^\n#`]*--example \w+)", text)
        if found:
            commands.append((name[:-3], found.group(1).strip()))
    return commands


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    keep = "--keep" in sys.argv
    commit = args[0] if args else "HEAD"
    source = subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip()
    clone = tempfile.mkdtemp(prefix="attn-first-run-")
    subprocess.check_call(["git", "clone", "-q", source, clone])
    subprocess.check_call(["git", "checkout", "-q", commit], cwd=clone)
    rev = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=clone, text=True)
    cpu = next(
        (l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
        "?",
    )
    rows = []

    def row(what, command):
        first, total, compiled, status = timed(command, clone)
        shown = "-" if first is None else f"{first:.1f}"
        rows.append((what, command, shown, f"{total:.1f}", "yes" if compiled else "no", status))
        print(f"{what}: first output {shown} s, done {total:.1f} s", file=sys.stderr)

    row("build", "cargo xtask build")
    for chapter, command in chapter_commands(clone):
        row(chapter, command)
    for exercise in EXERCISES:
        row(f"start {exercise}", f"cargo xtask exercise start {exercise}")
        row(f"check {exercise}", f"cargo xtask exercise check {exercise}")
    print(f"\nCommit {rev.strip()}, {cpu}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}\n")
    print("| step | command | first output (s) | done (s) | compiled | exit |")
    print("|---|---|---|---|---|---|")
    for what, command, first, total, compiled, status in rows:
        print(f"| {what} | `{command}` | {first} | {total} | {compiled} | {status} |")
    if keep:
        print(f"\nthe clone is in {clone}", file=sys.stderr)
    else:
        shutil.rmtree(clone, ignore_errors=True)


if __name__ == "__main__":
    main()
