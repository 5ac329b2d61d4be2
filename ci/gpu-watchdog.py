#!/usr/bin/env python3
"""Fail, and cancel the run, when GPU jobs wait for a runner too long.

Jobs for self-hosted runners wait up to a day when no runner is online, and
a waiting run blocks the release and (through its concurrency group) the
next one. This watches the run's jobs whose names start with JOB_PREFIX:
once one has been queued for more than GPU_QUEUE_MINUTES, it prints which,
asks the API to cancel the run, and exits 1. It exits 0 when every such job
has started (or none will: their builds failed) and the run's other jobs are
done with them.

Environment: API_URL, REPOSITORY (owner/name), RUN_ID, TOKEN (actions:
write), JOB_PREFIX (default "gpu "), GPU_QUEUE_MINUTES (default 45),
POLL_SECONDS (default 60). Any API that answers like GitHub's REST API works
(tests/test_ci_scripts.py serves one on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from datetime import datetime, timezone


def api(method: str, path: str) -> dict:
    request = urllib.request.Request(
        f"{os.environ['API_URL'].rstrip('/')}/repos/{os.environ['REPOSITORY']}/actions/runs/"
        f"{os.environ['RUN_ID']}{path}", method=method,
        headers={"Authorization": f"Bearer {os.environ['TOKEN']}", "Accept": "application/vnd.github+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return json.loads(body) if body else {}


def jobs() -> list[dict]:
    found, page = [], 1
    while True:
        batch = api("GET", f"/jobs?per_page=100&page={page}").get("jobs", [])
        found += batch
        if len(batch) < 100:
            return found
        page += 1


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def main() -> int:
    prefix = os.environ.get("JOB_PREFIX", "gpu ")
    limit = float(os.environ.get("GPU_QUEUE_MINUTES", "45")) * 60
    poll = float(os.environ.get("POLL_SECONDS", "60"))
    me = os.environ.get("WATCHDOG_JOB_NAME", "gpu-watchdog")
    while True:
        now = datetime.now(timezone.utc)
        all_jobs = jobs()
        gpu = [j for j in all_jobs if j["name"].startswith(prefix)]
        waiting = [j for j in gpu if j["status"] in ("queued", "waiting", "pending")]
        stuck = [j for j in waiting if (now - parse_time(j["created_at"])).total_seconds() > limit]
        if stuck:
            names = ", ".join(j["name"] for j in stuck)
            print(f"::error::no self-hosted GPU runner (labels self-hosted, linux, x64, gpu) picked up "
                  f"{names} within {limit / 60:.0f} minutes; cancelling this run so that it does not "
                  f"wait for a day. Bring a GPU runner online and re-run the failed jobs.")
            api("POST", "/cancel")
            return 1
        others_running = [j for j in all_jobs if j["name"] != me and not j["name"].startswith(prefix)
                          and j["status"] != "completed"]
        if gpu and not waiting:
            print(f"every GPU job has a runner: {', '.join(j['name'] for j in gpu)}")
            return 0
        if not gpu and not others_running:
            print("no GPU job was created (their builds failed or were skipped)")
            return 0
        time.sleep(poll)


if __name__ == "__main__":
    sys.exit(main())
