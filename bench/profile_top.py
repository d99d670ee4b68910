"""The top frames of a py-spy collapsed profile (`bench/relay.py --py-spy PREFIX`): by own samples and by samples
including callees, the playground's code and the libraries alike. `.venv/bin/python bench/profile_top.py FILE [N]`.
"""

import sys
from collections import Counter


def main():
    if len(sys.argv) < 2:
        print(__doc__)  # (`make bench` runs every script without arguments)
        return
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 15
    own, inclusive, total = Counter(), Counter(), 0
    with open(path, encoding="utf-8") as lines:
        rows = lines.read().splitlines()
    for line in rows:
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack:
            continue
        count = int(count)
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[-1].split(":")[0].split("/")[-1] + ")" for f in stack.split(";")
        ]
        leaf = frames[-1]
        if "select" in leaf or "epoll" in leaf or "wait (threading.py)" in leaf or leaf == "_worker (thread.py)":
            continue  # idle: the reactor, or a worker thread waiting for work
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    print(f"{total} busy samples\n\n| own % | frame |\n|---:|---|")
    for frame, count in own.most_common(top):
        print(f"| {100 * count / total:.1f} | `{frame}` |")
    print("\n| incl. % | frame |\n|---:|---|")
    for frame, count in inclusive.most_common(top + 10):
        print(f"| {100 * count / total:.1f} | `{frame}` |")


if __name__ == "__main__":
    main()
