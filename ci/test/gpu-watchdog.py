#!/usr/bin/env python3
"""Fail, and cancel the run, when GPU jobs wait for a runner too long; fail with them.

Jobs for self-hosted runners wait up to a day when no runner is online, and
a waiting run blocks the release and (through its concurrency group) the
next one. No job setting bounds that wait (`timeout-minutes` counts from
when a runner takes the job), so this job, on a GitHub-hosted runner, watches
the run's GPU jobs: once one has been queued for more than GPU_QUEUE_MINUTES,
it prints which, asks the API to cancel the run, and exits 1. A runner busy
with a GPU job (this run's own, or another run's: a job of this repository in
progress with the `gpu` label) is not missing: the wait then counts from the
last time one was seen busy.

It stays until every GPU job has finished, and exits 1 when one did not
succeed. "Re-run failed jobs" re-runs the failed jobs and the jobs that need
them, not the jobs they need; a watchdog that had passed would not run again,
and the re-run GPU job could sit in the queue for a day unwatched. Failing
with the GPU jobs makes the watchdog one of the failed jobs, re-run beside
them. It exits 0 when every GPU job has succeeded, or when none will be
created (the builds they need are done and no GPU job exists).

Attempts: the jobs API lists each job's latest execution, so after a re-run
it also lists the GPU jobs an earlier attempt finished. Only this attempt's
count: a job whose `run_attempt` is not RUN_ATTEMPT, or that completed before
this job was created (GPU jobs and this one need the same jobs, so they are
created together), belongs to an earlier attempt.

Job names: a job of a workflow that another workflow calls is named
"<caller job> / <job>" by the jobs API (release.yml's `wheels` job calls
this workflow: "wheels / gpu 2.11-cu130", "wheels / gpu-watchdog"). Names
are compared without that prefix, and only jobs that share the watchdog's
own prefix count, so the caller's other jobs (which wait for this one) are
never waited for.

Environment: API_URL, REPOSITORY (owner/name), RUN_ID, RUN_ATTEMPT (optional:
github.run_attempt), TOKEN (actions: write), JOB_PREFIX (default "gpu "),
BUILD_PREFIX (default "build ,bundle"), WATCHDOG_JOB_NAME (default
"gpu-watchdog"), GPU_QUEUE_MINUTES (default 45), POLL_SECONDS (default 60),
WATCH_MINUTES (default 330: past it, with nothing stuck, the watchdog exits 0
before the hosted runner's 360-minute limit stops it),
STARTED_POLL_SECONDS (default 300: the poll while this run's GPU jobs run),
OTHER_RUNS_POLL_SECONDS (default 300: how often other runs' jobs are
listed), RETRY_SECONDS (default 10: the first wait before a failed call is
tried again; doubled each time, four tries). Any API that answers like
GitHub's REST API works (tests/packaging/test_ci_scripts.py serves one on
127.0.0.1).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone


class Unanswered(Exception):
    """The API did not answer after its retries: this poll knows nothing."""


def repository_api(method: str, path: str) -> dict:
    """One REST call, retried on what passes (5xx, 429, a rate-limit 403, a dropped connection): the
    watchdog polls for hours, and a hiccup must not fail a run whose builds and tests passed."""
    request = urllib.request.Request(
        f"{os.environ['API_URL'].rstrip('/')}/repos/{os.environ['REPOSITORY']}{path}", method=method,
        headers={"Authorization": f"Bearer {os.environ['TOKEN']}", "Accept": "application/vnd.github+json"})
    delay = float(os.environ.get("RETRY_SECONDS", "10"))
    for attempt in range(4):
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                body = response.read()
            return json.loads(body) if body else {}
        except urllib.error.HTTPError as error:
            passing = error.code >= 500 or error.code == 429 or \
                (error.code == 403 and (error.headers.get("Retry-After") or
                                        error.headers.get("X-RateLimit-Remaining") == "0"))
            if not passing:
                raise
            wait = float(error.headers.get("Retry-After") or delay * 2 ** attempt)
            print(f"{method} {path}: HTTP {error.code}; again in {wait:.0f} s")
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            wait = delay * 2 ** attempt
            print(f"{method} {path}: {error}; again in {wait:.0f} s")
        time.sleep(wait)
    raise Unanswered(f"{method} {path}")


def api(method: str, path: str) -> dict:
    """This run's endpoints (/jobs, /cancel)."""
    return repository_api(method, f"/actions/runs/{os.environ['RUN_ID']}{path}")


def jobs(run_id: str | None = None) -> list[dict]:
    found, page = [], 1
    while True:
        path = f"/actions/runs/{run_id or os.environ['RUN_ID']}/jobs?per_page=100&page={page}"
        batch = repository_api("GET", path).get("jobs", [])
        found += batch
        if len(batch) < 100:
            return found
        page += 1


def gpu_busy_elsewhere() -> list[str]:
    """The in-progress jobs of this repository's other runs that hold a `gpu` runner: it is busy, not absent."""
    runs = repository_api("GET", "/actions/runs?status=in_progress&per_page=100").get("workflow_runs", [])
    return [job["name"] for run in runs if str(run.get("id")) != os.environ["RUN_ID"] for job in jobs(str(run["id"]))
            if job.get("status") == "in_progress" and "gpu" in job.get("labels", [])]


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def split_name(name: str) -> tuple[str, str]:
    """("wheels / ", "gpu 2.11-cu130") for a called workflow's job, ("", name) otherwise."""
    caller, sep, bare = name.rpartition(" / ")
    return (caller + sep, bare) if sep else ("", name)


def this_attempt(job: dict, watchdog: dict | None) -> bool:
    """Whether `job` runs in this attempt of the run (the module's docstring: Attempts)."""
    attempt = os.environ.get("RUN_ATTEMPT")
    if attempt and job.get("run_attempt") is not None and str(job["run_attempt"]) != attempt:
        return False
    done = job.get("completed_at")
    return not (done and watchdog and parse_time(done) < parse_time(watchdog["created_at"]))


# A finished job's conclusion that is not a failure of the job
PASSED = ("success", "skipped", "neutral")


def main() -> int:
    prefix = os.environ.get("JOB_PREFIX", "gpu ")
    # the jobs GPU jobs wait for: the builds and the bundle job after them
    builds = tuple(os.environ.get("BUILD_PREFIX", "build ,bundle").split(","))
    limit = float(os.environ.get("GPU_QUEUE_MINUTES", "45")) * 60
    poll = float(os.environ.get("POLL_SECONDS", "60"))
    me = os.environ.get("WATCHDOG_JOB_NAME", "gpu-watchdog")
    quiet_polls = 0  # polls in a row that saw every build done and no GPU job
    busy_since = None  # the last poll that saw a GPU runner busy (this run's GPU job or another run's)
    others_poll = float(os.environ.get("OTHER_RUNS_POLL_SECONDS", "300"))
    others_asked, others_busy = None, []  # when other runs' jobs were last listed, and what was busy then
    # This job runs on a GitHub-hosted runner, which stops a job at 360 minutes and so fails the run
    # (the GPU jobs may all pass): past WATCH_MINUTES, with nothing stuck (a queue behind this run's
    # or another run's GPU job included), it leaves the GPU jobs' results to them (a re-run of one
    # of them is then not watched). Polls are at most 5 minutes apart, so it exits before 360.
    watch_until = time.monotonic() + float(os.environ.get("WATCH_MINUTES", "330")) * 60
    # While one of this run's GPU jobs runs, none can get stuck before it ends: poll less often.
    started_poll = float(os.environ.get("STARTED_POLL_SECONDS", "300"))
    while True:
        now = datetime.now(timezone.utc)
        try:
            all_jobs = jobs()
        except Unanswered as error:  # unknown is not stuck: the next poll decides
            print(f"no answer from the API ({error}); polling again")
            time.sleep(poll)
            continue
        mine = [j for j in all_jobs if split_name(j["name"])[1] == me]
        # the newest of the watchdog's executions is this one (its own name, one per attempt)
        watchdog = max(mine, key=lambda j: j["created_at"]) if mine else None
        group = split_name(watchdog["name"])[0] if watchdog else ""
        ours = [{**j, "bare": split_name(j["name"])[1]} for j in all_jobs if split_name(j["name"])[0] == group]
        gpu = [j for j in ours if j["bare"].startswith(prefix) and j["bare"] != me and this_attempt(j, watchdog)]
        waiting = [j for j in gpu if j["status"] in ("queued", "waiting", "pending", "requested")]
        running = [j for j in gpu if j["status"] == "in_progress"]
        finished = [j for j in gpu if j["status"] == "completed"]
        # Legs queued behind this run's own running GPU jobs are not stuck: a runner answered.
        # The wait counts from when the job was queued, or from when a GPU runner was last seen busy
        # with another run's job (a push to main and a tag of the same commit share it), whichever is later.
        # Other runs' jobs cost a call per run: asked every OTHER_RUNS_POLL_SECONDS, not every poll
        # (the token's 1,000 requests an hour are shared with the publishing jobs).
        busy = []
        if waiting and not running:
            if others_asked is None or (now - others_asked).total_seconds() >= others_poll:
                try:
                    others_busy, others_asked = gpu_busy_elsewhere(), now
                except Unanswered as error:
                    print(f"no answer from the API ({error}); polling again")
                    time.sleep(poll)
                    continue
            busy = others_busy
        if busy:
            print(f"GPU runner busy with another run: {', '.join(busy[:3])}; waiting")
        if busy or running:
            busy_since = now
        waited = {j["name"]: now - max(parse_time(j["created_at"]), busy_since or parse_time(j["created_at"]))
                  for j in waiting}
        stuck = [j for j in waiting if waited[j["name"]].total_seconds() > limit]
        if stuck:
            names = ", ".join(j["name"] for j in stuck)
            print(f"::error::no self-hosted GPU runner (labels self-hosted, linux, x64, gpu) picked up "
                  f"{names} within {limit / 60:.0f} minutes; cancelling this run so that it does not "
                  f"wait for a day. Bring a GPU runner online and re-run the failed jobs.")
            try:
                api("POST", "/cancel")
            except Unanswered:
                print("::warning::the cancel request got no answer; this job fails, which fails the run")
            return 1
        if gpu and len(finished) == len(gpu):
            failed = [j for j in finished if j.get("conclusion") not in PASSED]
            if failed:
                names = ", ".join(f"{j['name']} ({j.get('conclusion')})" for j in failed)
                print(f"GPU jobs that did not pass: {names}. This job fails with them, so that "
                      f"'re-run failed jobs' runs it again beside them and watches their queue.")
                return 1
            print(f"every GPU job passed: {', '.join(j['name'] for j in finished)}")
            return 0
        if time.monotonic() > watch_until:  # (nothing stuck: that was decided above)
            print("::warning::this job is near the 360-minute limit of GitHub-hosted runners: it stops "
                  "watching; the GPU jobs' own results decide the run (one still queued waits unwatched)")
            return 0
        answered = bool(gpu) and bool(running or not waiting)  # a GPU runner works on this run's jobs
        builds_running = [j for j in ours if j["bare"].startswith(builds) and j["status"] != "completed"]
        # GPU jobs are created moments after the bundle job ends: two quiet polls in a row.
        quiet_polls = quiet_polls + 1 if not gpu and not builds_running else 0
        if quiet_polls >= 2:
            print("no GPU job was created (their builds failed or were skipped)")
            return 0
        time.sleep(started_poll if answered else poll)


if __name__ == "__main__":
    sys.exit(main())
