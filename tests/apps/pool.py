"""A multiprocessing pool, the pattern of a data loader with workers: POOL workers (default 4)
run TASKS tasks (default 8), each writing a file of 1 MiB into DIR and reading it back. Prints
"wrote BYTES read BYTES", the bytes the tasks moved to and from their files.

    python3 pool.py DIR [POOL [TASKS]]
"""
import multiprocessing
import os
import sys

MIB = 1 << 20


def task(args):
    d, i = args
    path = os.path.join(d, f"task{i}.dat")
    with open(path, "wb") as f:
        wrote = f.write(bytes([i % 256]) * MIB)
    with open(path, "rb") as f:
        read = len(f.read())
    return wrote, read


def main():
    d = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    with multiprocessing.Pool(workers) as pool:
        done = pool.map(task, [(d, i) for i in range(tasks)])
    print(f"wrote {sum(w for w, _ in done)} read {sum(r for _, r in done)}")


if __name__ == "__main__":
    main()
