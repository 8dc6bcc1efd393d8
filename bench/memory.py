"""What this machine charges for memory a process touches for the first time: kernel seconds and
page faults per GiB, twice in a row (the second time the memory was just freed). Prints one JSON
line. The wallet products' kernel time is about their page faults times the cost of one
(docs/performance.md)."""

import argparse
import json
import mmap
import resource

GIB = 1 << 30


def touched(gib: int) -> dict:
    """Kernel seconds and page faults per GiB to map `gib` GiB, write one byte of every page of
    it, and unmap it."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    area = mmap.mmap(-1, gib * GIB)
    stride = mmap.PAGESIZE * 1024
    for start in range(0, gib * GIB, stride):
        area[start:start + stride:mmap.PAGESIZE] = b"\1" * 1024
    area.close()
    after = resource.getrusage(resource.RUSAGE_SELF)
    faults = after.ru_minflt - before.ru_minflt
    kernel = after.ru_stime - before.ru_stime
    return {"kernel_s_per_gib": round(kernel / gib, 3), "faults_per_gib": faults // gib,
            "kernel_us_per_fault": round(kernel / max(faults, 1) * 1e6, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=int, default=2)
    args = parser.parse_args()
    figures = {when: touched(args.gib) for when in ("first", "again")}
    print(json.dumps({"bench": "memory", "gib": args.gib, **figures}))


if __name__ == "__main__":
    main()
