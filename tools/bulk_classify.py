#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Classify many images with vkvit on a Dask cluster: one machine (a LocalCluster, the default) or many.

    /usr/bin/python3 tools/bulk_classify.py IMAGES_DIR -o predictions.jsonl                  # 2 local workers
    /usr/bin/python3 tools/bulk_classify.py list.txt -o out.csv --workers 4 --batch 64 --top-k 3
    /usr/bin/python3 tools/bulk_classify.py /shared/images -o out.jsonl --scheduler tcp://10.0.0.1:8786

SOURCES are directories (walked recursively, image files by extension, sorted) or list files (one image path per
line; blank lines and lines starting with '#' skipped; relative paths are relative to the current directory). Rows
name each image by its path as listed; workers open its absolute path, which must be readable at the same place on
every worker (a shared file system on a real cluster). An image that cannot be read or decoded gets a row with an
error, and counts as done on a rerun (delete its row to try it again).

How it works:
  - the client lists the images, drops those already in the output (resume), and submits them in tasks of
    --batch images, keeping a bounded number of tasks in flight;
  - every worker holds one vkvit Context + Model + Session (batch = --batch, GPU top-K), created lazily by the
    first task that reaches it and cached in a Dask worker plugin (re-installed by Dask on a restarted worker).
    Its device: --devices (LocalCluster worker i gets entry i mod len), else $VKVIT_DEVICE of the worker
    process, else vkvit's default choice. The model file's bytes travel with the plugin, so workers need no copy
    of it (--model-on-workers loads the path on each worker instead);
  - workers decode the images (vkvit.load_image: Pillow, every mode mapped to the 8-bit pixels `vkvit classify`
    decodes the file to, EXIF orientation applied), pre-process them on the GPU (vkvit_session_set_images: resize,
    crop, normalise as the model file says) and return the top-K; a task that fails on a worker reaches the
    client as one sentence;
  - the client is the only writer: rows are appended as tasks complete (JSON Lines, or CSV), each batch flushed
    and fsync'ed, one row per path (duplicates from retried tasks are dropped by path). A killed worker's tasks are
    re-run by Dask elsewhere; a killed client loses at most the batch it was writing (a torn last line is cut off
    at the next start) and a rerun skips every path already written.

Output rows: path, model (file name), error (null/empty, or why the image could not be classified), and for
ranks 1..K the label, class index and probability. JSON Lines:
    {"path": "...", "model": "vit5_cifar10.vkvit", "error": null, "labels": [...], "classes": [...],
     "probabilities": [...]}
CSV columns: path, model, error, label_1, class_1, probability_1, ..., label_K, class_K, probability_K.

File names that are not UTF-8 (a Latin-1 b'caf\\xe9.png') are written losslessly, as Python names them
(surrogateescape): in JSON Lines each byte that is not UTF-8 is the escape \\udc80..\\udcff (b'\\xe9' -> "\\udce9"),
so the file stays valid UTF-8 and os.fsencode(row["path"]) gives the bytes back; in CSV the name's own bytes are
written as they are (read it with encoding="utf-8", errors="surrogateescape"). List files are read the same way.

Exit codes: 0 every image has a row (some may carry an error), 1 usage error, 2 a task failed for good (rerun to
resume), 3 no images, 4 the output cannot be written (a full disk, /dev/full, a missing folder: one sentence; the
rows written before stay, and a rerun resumes after them).

Worker processes need the vkvit Python package (pip install ./python, or this source tree, which LocalCluster
workers find on their own), libvkvit.so ($VKVIT_LIBRARY), numpy and Pillow. Throughput and a multi-machine set-up:
README.md, "Many machines".
"""

from __future__ import annotations

import argparse
import csv
import errno
import io
import json
import os
import re
import stat
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTHON_DIR = os.path.join(REPO, "python")
DEFAULT_MODEL = os.path.join(REPO, "assets", "models", "vit5_cifar10.vkvit")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tga", ".webp", ".tif", ".tiff", ".ppm", ".pgm")
PLUGIN_NAME = "vkvit-bulk-classify"

try:
    from distributed import WorkerPlugin
except ImportError:  # the module stays importable (e.g. for --help) without Dask; run() needs it
    WorkerPlugin = object  # type: ignore[misc,assignment]


def _import_vkvit(python_dir: Optional[str] = PYTHON_DIR):
    try:
        import vkvit  # noqa: F401
    except ImportError:
        if python_dir and python_dir not in sys.path:
            sys.path.insert(0, python_dir)
        import vkvit  # noqa: F401
    return sys.modules["vkvit"]


# ------------------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------------------

def list_images(sources: Iterable[str]) -> List[str]:
    """The image paths of directories (recursive, sorted) and list files, in order, each path once."""
    seen, out = set(), []
    for src in sources:
        if os.path.isdir(src):
            found = []
            for root, dirs, files in os.walk(src):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(root, f) for f in files
                          if not f.startswith(".") and f.lower().endswith(IMAGE_EXTENSIONS)]
            paths = sorted(found)
        elif os.path.isfile(src):
            with open(src, encoding="utf-8", errors="surrogateescape") as f:   # names as os.walk gives them
                paths = [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
        else:
            raise FileNotFoundError(f"bulk_classify: '{src}' is neither a directory nor a list file")
        for p in paths:
            if p not in seen:
                seen.add(p)
                out.append(p)
    return out


# ------------------------------------------------------------------------------------------------------------
# Output: the client is the only writer
# ------------------------------------------------------------------------------------------------------------

class OutputError(Exception):
    """The results file cannot be opened or written (a full disk, /dev/full, a missing folder): exit 4."""


# A lone surrogate: what Python makes of a byte of a file name that is not UTF-8 (surrogateescape, U+DC80..U+DCFF).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_line(row: dict) -> str:
    """One JSON Lines row. json.dumps(ensure_ascii=False) keeps lone surrogates as they are, which no UTF-8 file
    can hold; they become JSON escapes (\\udcXX), which json.loads turns back into the same string."""
    return _SURROGATE.sub(lambda m: "\\u%04x" % ord(m.group()), json.dumps(row, ensure_ascii=False)) + "\n"


class ResultWriter:
    """Appends rows to a JSON Lines or CSV file, one per path; knows the paths already there (resume). Every
    failure to open or write the file is an OutputError with one sentence."""

    def __init__(self, path: str, fmt: str, top_k: int):
        self.path, self.fmt, self.top_k = path, fmt, top_k
        self.written = 0
        self.failed = False
        self.done = self._read_done()
        try:
            # surrogateescape: a CSV row carries a file name's own bytes (JSON Lines rows are escaped before this)
            self.f = open(path, "a", encoding="utf-8", errors="surrogateescape", newline="")
        except OSError as e:
            raise OutputError(f"bulk_classify: cannot open '{path}' to append the results: "
                              f"{e.strerror or e}") from None
        if fmt == "csv" and self._at_start():
            self.f.write(self._csv_line(self._csv_header()))
            self._sync()

    def _at_start(self) -> bool:
        """Whether the output is still empty (a device or a pipe counts as empty: its header goes first)."""
        try:
            return self.f.tell() == 0
        except OSError:
            return True

    def _csv_header(self) -> List[str]:
        cols = ["path", "model", "error"]
        for r in range(1, self.top_k + 1):
            cols += [f"label_{r}", f"class_{r}", f"probability_{r}"]
        return cols

    @staticmethod
    def _csv_line(fields: List) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(fields)
        return buf.getvalue()

    def _read_done(self) -> set:
        """Paths already written. A torn last line (a client killed mid-write) is cut off. Only a regular file is
        read: a device (/dev/full reads as endless zeros) or a pipe holds no earlier rows."""
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                return set()
            with open(self.path, "rb") as f:
                data = f.read()
            end = data.rfind(b"\n") + 1
            if end < len(data):
                with open(self.path, "r+b") as f:
                    f.truncate(end)
                    f.flush()
                    os.fsync(f.fileno())
                data = data[:end]
        except FileNotFoundError:
            return set()
        except OSError as e:
            raise OutputError(f"bulk_classify: cannot read '{self.path}' to resume from it: "
                              f"{e.strerror or e}") from None
        text = data.decode("utf-8", "surrogateescape")   # a CSV row's path as the bytes it was written from
        done = set()
        if self.fmt == "jsonl":
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        done.add(json.loads(line)["path"])
                    except (ValueError, KeyError, TypeError):
                        raise ValueError(f"bulk_classify: {self.path}:{n} is not a result row; "
                                         "not resuming into it") from None
        else:
            rows = list(csv.reader(io.StringIO(text)))
            if rows:
                if rows[0] != self._csv_header():
                    raise ValueError(f"bulk_classify: {self.path} has other columns than this run would write "
                                     f"(another --top-k?); not resuming into it")
                done = {r[0] for r in rows[1:] if r}
        return done

    def _fail(self, e: OSError) -> "OutputError":
        self.failed = True
        return OutputError(f"bulk_classify: cannot write the results to '{self.path}': {e.strerror or e}; "
                           f"{self.written} rows written before; rerun to resume")

    def _sync(self) -> None:
        try:
            self.f.flush()
            try:
                os.fsync(self.f.fileno())
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.EROFS):   # a device or a pipe cannot be synced: fine
                    raise
        except OSError as e:
            raise self._fail(e) from None

    def write(self, rows: List[dict]) -> int:
        """Appends the rows whose path is new; flush + fsync. Returns how many were written."""
        n = 0
        try:
            for row in rows:
                if row["path"] in self.done:
                    continue
                if self.fmt == "jsonl":
                    self.f.write(_json_line(row))
                else:
                    fields = [row["path"], row["model"], row["error"] or ""]
                    for r in range(self.top_k):
                        if r < len(row["labels"]):
                            fields += [row["labels"][r], row["classes"][r], repr(row["probabilities"][r])]
                        else:
                            fields += ["", "", ""]
                    self.f.write(self._csv_line(fields))
                self.done.add(row["path"])
                n += 1
        except OSError as e:              # a buffer that filled up while writing
            raise self._fail(e) from None
        self._sync()
        self.written += n
        return n

    def close(self) -> None:
        """Closes the file; a failure is an OutputError unless writing failed already (then the rows that could
        not be written are dropped with the file: a rerun writes them)."""
        try:
            self.f.close()
        except OSError as e:
            if not self.failed:
                raise self._fail(e) from None


# ------------------------------------------------------------------------------------------------------------
# Worker side
# ------------------------------------------------------------------------------------------------------------

class VkvitWorker(WorkerPlugin):
    """Installed on every worker (and again on a restarted one). Holds that worker's vkvit session, created by the
    first task that needs it."""

    name = PLUGIN_NAME

    def __init__(self, model_label: str, model_bytes: Optional[bytes], model_path: Optional[str], batch: int,
                 top_k: int, precision: str, devices: Optional[List[str]], python_dir: Optional[str]):
        self.model_label, self.model_bytes, self.model_path = model_label, model_bytes, model_path
        self.batch, self.top_k, self.precision = batch, top_k, precision
        self.devices, self.python_dir = devices, python_dir
        self._state = None

    def setup(self, worker) -> None:
        self._worker_name = worker.name
        self._state = None

    def teardown(self, worker) -> None:
        if self._state is not None:
            self._state[0].close()                      # closes the session and model first
            self._state = None

    def _device(self) -> Optional[str]:
        if self.devices:
            try:
                index = int(self._worker_name)
            except (TypeError, ValueError):
                index = abs(hash(str(self._worker_name)))
            return self.devices[index % len(self.devices)]
        return os.environ.get("VKVIT_DEVICE") or None

    def session(self):
        if self._state is None:
            vkvit = _import_vkvit(self.python_dir)
            ctx = vkvit.Context(device=self._device())
            try:
                model = vkvit.Model(ctx, self.model_bytes if self.model_bytes is not None else self.model_path)
                k = min(self.top_k, model.num_classes)
                session = vkvit.Session(model, batch=self.batch, precision=self.precision, top_k=k)
            except BaseException:
                ctx.close()
                raise
            self._state = (ctx, model, session)
        return self._state

    def classify(self, items: List[List[str]]) -> dict:
        """items: [path as listed (the row's key), absolute path (what is opened)]. Each image is decoded by the
        vkvit package's helper (vkvit.load_image: Pillow, every mode mapped to 8-bit RGB as `vkvit classify`'s
        decoder maps it, EXIF orientation applied), so a row says what the CLI says for that file."""
        ctx, model, session = self.session()
        vkvit = sys.modules["vkvit"]
        t0 = time.perf_counter()                      # busy time: decode + classify, not session creation
        k = session.top_k
        paths = [listed for listed, _ in items]
        rows: List[Optional[dict]] = [None] * len(paths)
        good, pictures = [], []
        for i, (p, absolute) in enumerate(items):
            try:
                pictures.append(vkvit.load_image(absolute))
                good.append(i)
            except vkvit.BadImageError as e:          # one bad file is one error row
                rows[i] = self._row(p, None, f"cannot decode: {e}")
        # classify gives a bad picture an entry with .error (the library's sentence), not a failed call
        for i, res in zip(good, session.classify(pictures, top_k=k)):
            if res.error is not None:
                rows[i] = self._row(paths[i], None, res.error)
            else:
                rows[i] = self._row(paths[i], res, None)
        return {"rows": rows, "validation_messages": ctx.validation_messages(),
                "worker": str(self._worker_name), "pid": os.getpid(), "busy_s": time.perf_counter() - t0}

    def _row(self, path: str, preds, error: Optional[str]) -> dict:
        preds = preds or []
        return {"path": path, "model": self.model_label, "error": error,
                "labels": [p[0] for p in preds], "classes": [p[1] for p in preds],
                "probabilities": [p[2] for p in preds]}


def classify_task(items: List[List[str]], plugin_name: str = PLUGIN_NAME) -> dict:
    """The Dask task: classify [listed path, absolute path] items with this worker's session.

    Any failure leaves the worker as a RuntimeError holding one sentence (which worker, the exception's type and
    message). The original exception would travel pickled, and the client cannot always unpickle it: a
    vkvit.NoDeviceError needs the vkvit package on the client, which the client never imports, and Dask then
    hands over the pickle's bytes as the message. The sentence is made outside the except block, so the new
    exception carries no __context__ (which would be pickled with it)."""
    from distributed import get_worker
    worker = get_worker()
    try:
        return worker.plugins[plugin_name].classify(items)
    except Exception as e:  # noqa: BLE001 - every failure reaches the client as a sentence
        sentence = f"worker {worker.name} ({worker.address}): {type(e).__name__}: {e}"
    raise RuntimeError(sentence)


# ------------------------------------------------------------------------------------------------------------
# Client
# ------------------------------------------------------------------------------------------------------------

def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="bulk_classify.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("sources", nargs="+", metavar="SOURCE", help="image directory or list file")
    ap.add_argument("-o", "--output", required=True, help="results file (appended to; a rerun resumes)")
    ap.add_argument("--format", choices=["jsonl", "csv"],
                    help="output format (default: csv for a .csv output, else jsonl)")
    ap.add_argument("--model", default=DEFAULT_MODEL, help="vkvit model file (default: the bundled ViT-5, as for vkvit classify)")
    ap.add_argument("--top-k", type=int, default=5, help="classes per image (default 5, at most 32)")
    ap.add_argument("--batch", type=int, default=32, help="images per task and per inference (default 32)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes (default 2)")
    ap.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (no LocalCluster)")
    ap.add_argument("--devices", help="comma-separated Vulkan devices (index or name substring) for the "
                                      "LocalCluster workers, round-robin (default: $VKVIT_DEVICE / vkvit's choice)")
    ap.add_argument("--precision", choices=["fp32", "fp16"], default="fp32")
    ap.add_argument("--resources", metavar="NAME=N[,...]",
                    help="Dask resources each task needs, e.g. GPU=1 to run only on workers started with "
                         "--resources GPU=1")
    ap.add_argument("--model-on-workers", action="store_true",
                    help="load --model from that path on every worker instead of shipping its bytes")
    ap.add_argument("--in-flight", type=int, default=0, help="tasks in flight (default 4 per worker)")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    if not 1 <= args.top_k <= 32:
        ap.error("--top-k must be in [1, 32]")
    if args.batch < 1 or args.workers < 1:
        ap.error("--batch and --workers must be >= 1")
    if args.format is None:
        args.format = "csv" if args.output.lower().endswith(".csv") else "jsonl"
    return args


def _parse_resources(text: Optional[str]) -> Optional[Dict[str, float]]:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        out[name.strip()] = float(value or 1)
    return out


def local_cluster(workers: int):
    """A LocalCluster of `workers` processes with one thread each, no dashboard, a free port, whose workers
    import vkvit from this source tree when it is not installed."""
    from distributed import LocalCluster
    if PYTHON_DIR not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [PYTHON_DIR, os.environ.get("PYTHONPATH")] if p)
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                        scheduler_port=0, silence_logs=40)


def run(args: argparse.Namespace, on_result: Optional[Callable[[object, dict], None]] = None,
        client=None) -> dict:
    """Runs the whole job; returns statistics. `on_result(client, stats)` is called after each batch is written
    (tests use it to kill a worker part-way). `client`: an existing distributed.Client to use (and leave open)
    instead of --scheduler / a new LocalCluster."""
    import cloudpickle
    from distributed import Client, as_completed

    # Tasks and the plugin travel by value, so workers need only the vkvit package, not this file.
    module = sys.modules[__name__]
    if __name__ != "__main__":
        cloudpickle.register_pickle_by_value(module)

    paths = list_images(args.sources)
    writer = ResultWriter(args.output, args.format, args.top_k)
    todo = [p for p in paths if p not in writer.done]
    stats = {"images": len(paths), "skipped": len(paths) - len(todo), "written": 0, "errors": 0,
             "validation_messages": 0, "seconds": 0.0, "images_per_s": 0.0, "first_result_s": None,
             "worker_images_per_s": None, "workers": 0, "tasks": 0}
    busy: Dict[str, List[float]] = {}                 # worker -> [images, seconds busy]
    if not todo:
        writer.close()
        return stats

    model_bytes = None
    if not args.model_on_workers:
        with open(args.model, "rb") as f:
            model_bytes = f.read()
    plugin = VkvitWorker(os.path.basename(args.model), model_bytes, os.path.abspath(args.model), args.batch,
                         args.top_k, args.precision, args.devices.split(",") if args.devices else None, PYTHON_DIR)
    cluster = None
    own_client = client is None
    if client is not None:
        pass
    elif args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = local_cluster(args.workers)
        client = Client(cluster)
    t0 = time.monotonic()
    ac = as_completed()
    in_flight_futures = set()                         # submitted, not yet come back
    try:
        client.register_worker_plugin(plugin, name=PLUGIN_NAME)
        nworkers = len(client.scheduler_info()["workers"]) or 1
        stats["workers"] = nworkers
        in_flight = args.in_flight or 4 * nworkers
        resources = _parse_resources(args.resources)
        # Workers open absolute paths (their working directory is not ours); rows keep the paths as listed.
        items = [[p, os.path.abspath(p)] for p in todo]
        batches = iter([items[i:i + args.batch] for i in range(0, len(items), args.batch)])

        def submit_next() -> bool:
            b = next(batches, None)
            if b is None:
                return False
            fut = client.submit(classify_task, b, PLUGIN_NAME, resources=resources, pure=False)
            in_flight_futures.add(fut)
            ac.add(fut)
            stats["tasks"] += 1
            return True

        for _ in range(in_flight):
            if not submit_next():
                break
        failed = None
        for fut in ac:
            in_flight_futures.discard(fut)
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - stop submitting, keep what finished
                failed = failed or e
                fut.release()
                continue
            fut.release()
            n = writer.write(res["rows"])
            if stats["first_result_s"] is None:
                stats["first_result_s"] = time.monotonic() - t0
            b = busy.setdefault(res["worker"], [0, 0.0])
            b[0] += len(res["rows"])
            b[1] += res["busy_s"]
            stats["written"] += n
            stats["errors"] += sum(1 for r in res["rows"] if r["error"])
            stats["validation_messages"] += res["validation_messages"]
            if not args.quiet:
                el = time.monotonic() - t0
                print(f"\r{len(writer.done)}/{len(paths)} images  {stats['written'] / max(el, 1e-9):.1f} images/s",
                      end="", file=sys.stderr, flush=True)
            if on_result is not None:
                on_result(client, stats)
            if failed is None:
                submit_next()
        if not args.quiet:
            print(file=sys.stderr)
        if failed is not None:
            raise RuntimeError(f"bulk_classify: a task failed for good ({type(failed).__name__}: {failed}); "
                               f"{stats['written']} rows written; rerun to resume") from failed
    finally:
        stats["seconds"] = time.monotonic() - t0
        stats["images_per_s"] = stats["written"] / stats["seconds"] if stats["seconds"] > 0 else 0.0
        if busy:
            # each worker's own rate while it had a batch (decode + GPU), without start-up and scheduling
            stats["worker_images_per_s"] = {w: round(n / t, 2) for w, (n, t) in sorted(busy.items()) if t > 0}
        try:
            writer.close()
        finally:
            # after a failure (an output that cannot be written) the tasks still queued are of no use: a caller's
            # client (and its workers) should not keep running them
            ac.clear()
            if in_flight_futures:
                client.cancel(list(in_flight_futures))
            if own_client:
                client.close()
            if cluster is not None:
                cluster.close()
    return stats


def main(argv: Optional[List[str]] = None, client=None) -> int:
    """The command line; `client`: an existing distributed.Client for run() (tests)."""
    args = parse_args(argv)
    try:
        paths = list_images(args.sources)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    if not paths:
        print("bulk_classify: no images in " + ", ".join(args.sources), file=sys.stderr)
        return 3
    try:
        stats = run(args, client=client)
    except OutputError as e:
        print(e, file=sys.stderr)
        return 4
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 2
    except ValueError as e:
        print(e, file=sys.stderr)
        return 1
    summary = sys.stderr if args.quiet else sys.stdout
    try:
        print(json.dumps(stats), file=summary, flush=True)
    except OSError as e:                              # stdout on a full disk or a closed pipe, as the CLI says it
        name = "standard error" if summary is sys.stderr else "standard output"
        # the unwritten summary must not fail again (with a traceback) when Python flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), summary.fileno())
        print(f"bulk_classify: cannot write the summary to {name}: {e.strerror or e}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
