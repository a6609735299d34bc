"""Renumbers chapters everywhere at once (a maintainer's tool, not run in CI).

    python3 tools/renumber_chapters.py 8:9 9:10 10:11

moves every file named after a chapter (`book/ch09-*.md`, `book/figures/ch09-*`,
`book/data/ch09-*`, `examples/ch09_*`, `tests/ch09_*`, `src/exercises/ch09.rs`,
...) with `git mv`, and rewrites every reference in the tracked text files:
"chapter 9", "chapters 9 and 10", "Figure 9.2", "Figures 9.1 and 10.1",
`ch09`, `Ch09`, `figure_9_2`. The mapping is applied in one pass, so 8:9 and
9:10 together do not collide. Review `git diff` afterwards: a chapter whose
content moved to another chapter needs its references edited by hand first.
"""

import os
import re
import subprocess
import sys

LIST = r"\d+(?:(?:,\s+|,?\s+(?:and|or|to)\s+)\d+)*"
CHAPTERS = re.compile(r"\b([Cc]hapters?)(\s+)(" + LIST + r")\b")
FIGURES = re.compile(
    r"\b(Figures?)(\s+)(\d+\.\d+(?:(?:,\s+|,?\s+(?:and|or|to)\s+)\d+\.\d+)*)"
)
FILE_IDS = re.compile(r"\b([Cc]h)(\d\d)(?=[-_.A-Z]|\b)")
FIGURE_FNS = re.compile(r"\b(figure_)(\d+)(_\d+)")


def main(pairs):
    mapping = {int(a): int(b) for a, b in (p.split(":") for p in pairs)}
    move = lambda n: mapping.get(n, n)

    def chapters(m):
        nums = re.sub(r"\d+", lambda d: str(move(int(d.group()))), m.group(3))
        return m.group(1) + m.group(2) + nums

    def figures(m):
        refs = re.sub(
            r"(\d+)(\.\d+)", lambda d: f"{move(int(d.group(1)))}{d.group(2)}", m.group(3)
        )
        return m.group(1) + m.group(2) + refs

    def file_ids(m):
        return f"{m.group(1)}{move(int(m.group(2))):02}"

    def figure_fns(m):
        return f"{m.group(1)}{move(int(m.group(2)))}{m.group(3)}"

    files = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, check=True
    ).stdout.split()
    renames = []
    for path in files:
        if path.endswith(".lock") or path.endswith(".svg") or "/golden/" in path:
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        new = CHAPTERS.sub(chapters, text)
        new = FIGURES.sub(figures, new)
        new = FILE_IDS.sub(file_ids, new)
        new = FIGURE_FNS.sub(figure_fns, new)
        if new != text:
            open(path, "w", encoding="utf-8").write(new)
    # Files and folders named after a chapter (`report/src/ch16/` holds
    # chapter 16's modules): each path component is renamed.
    for path in files:
        parts = path.split("/")
        moved = [
            FILE_IDS.sub(file_ids, p) if re.match(r"ch\d\d(?=[-_.]|$)", p) else p for p in parts
        ]
        if moved != parts:
            renames.append((path, "/".join(moved)))
    # Move the highest first so that no target exists yet.
    for old, new in sorted(renames, key=lambda r: r[0], reverse=True):
        os.makedirs(os.path.dirname(new) or ".", exist_ok=True)
        subprocess.run(["git", "mv", old, new], check=True)
        print(f"{old} -> {new}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
