"""Container health checks of the flowbroker image; exit status 0 means healthy.

    healthcheck.py api [URL]                      GET /api/health answers 200 with status "ok"
    healthcheck.py worker --broker B --group G    the execution group's liveness file is fresh
                                                  and names a running process

The worker's file is the one its LivenessStep touches every 2 seconds under FLOWBROKER_DATA.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8080/api/health"


def check_api(url: str, timeout: float) -> str | None:
    """None when the configuration manager reports itself healthy, else why not."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = json.load(response)
    except (OSError, ValueError) as exc:
        return f"{url}: {exc}"
    status = body.get("status") if isinstance(body, dict) else None
    if status != "ok":
        return f"{url}: status {status!r}, database {body.get('database') if isinstance(body, dict) else '?'}"
    return None


def check_worker(data: Path, broker: str, group: str, max_age: float) -> str | None:
    """None when the group's liveness file was touched within ``max_age`` seconds by a live process."""
    from flowbroker.worker.bootsteps import liveness_path

    path = liveness_path(data, broker, group)
    try:
        age = time.time() - path.stat().st_mtime
        pid = int(path.read_text().strip() or 0)
    except FileNotFoundError:
        return f"{path}: not written yet"
    except (OSError, ValueError) as exc:
        return f"{path}: {exc}"
    if age > max_age:
        return f"{path}: last touched {age:.0f} s ago"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"{path}: process {pid} has ended"
    except PermissionError:
        pass  # alive, owned by another user
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    api = sub.add_parser("api")
    api.add_argument("url", nargs="?", default=DEFAULT_URL)
    api.add_argument("--timeout", type=float, default=5.0)
    worker = sub.add_parser("worker")
    worker.add_argument("--broker", default="default")
    worker.add_argument("--group", default="default")
    worker.add_argument("--data", default=None, help="data directory (default FLOWBROKER_DATA or ./var)")
    worker.add_argument("--max-age", type=float, default=15.0)
    args = parser.parse_args(argv)
    if args.what == "api":
        problem = check_api(args.url, args.timeout)
    else:
        data = Path(args.data or os.environ.get("FLOWBROKER_DATA") or "./var").resolve()
        problem = check_worker(data, args.broker, args.group, args.max_age)
    if problem is not None:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    print("healthy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
