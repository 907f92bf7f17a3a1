"""Snapshot create time into a directory on the same file system: the files copied (or
reflinked) as ``DirectoryStore`` does, against the hard links it used to make (the
baseline, which shared the live index's inodes), interleaved in one run.

Data dirs: the real corpus (``shared/corpus/dsh`` ingested) and a bigger generated one
(``gen_corpus.py --kind mix --events N``, ingested). Prints the median of ``--reps``
creates per way and data dir, with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from indexer.snapshot.create import create_snapshot  # noqa: E402
from indexer.snapshot.stores import DirectoryStore  # noqa: E402


class LinkingStore(DirectoryStore):
    """The baseline: a hard link when the snapshot is on the same file system."""

    def upload_file(self, path: str, local: Path) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(local, target)
        except OSError:
            shutil.copyfile(local, target)


def sessionq(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "worker", *args], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(data: Path, tmp: Path, reps: int) -> dict[str, float]:
    times: dict[str, list[float]] = {"copy": [], "hard link": []}
    for rep in range(reps):
        for way, cls in (("copy", DirectoryStore), ("hard link", LinkingStore)):
            where = tmp / f"snaps-{way.replace(' ', '-')}-{rep}"
            started = time.perf_counter()
            create_snapshot(data, cls(where))
            times[way].append(time.perf_counter() - started)
            shutil.rmtree(where)
    return {way: statistics.median(t) for way, t in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=300_000, help="events of the generated dir")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=REPO / ".sessionq" if (REPO / ".sessionq").is_dir()
                                     else None) as tmp_name:
        tmp = Path(tmp_name)
        real, big = tmp / "real", tmp / "big"
        sessionq("ingest", str(REPO.parent / "shared/corpus/dsh"), "--data", str(real))
        subprocess.run([sys.executable, str(REPO / "bench/gen_corpus.py"), "--kind", "mix",
                        "--out", str(tmp / "corpus"), "--events", str(args.events)],
                       cwd=REPO, check=True, stdout=subprocess.DEVNULL)
        sessionq("ingest", str(tmp / "corpus"), "--data", str(big))
        load = os.getloadavg()
        print(f"snapshot create, median of {args.reps} (load {load[0]:.1f} {load[1]:.1f})")
        for name, data in (("real corpus", real), (f"generated {args.events:,} events", big)):
            figures = measure(data, tmp, args.reps)
            print(f"  {name} ({du(data) / 1e6:,.1f} MB): copy {figures['copy']:.3f} s,"
                  f" hard link {figures['hard link']:.3f} s"
                  f" (x{figures['copy'] / figures['hard link']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
