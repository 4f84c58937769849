"""What devlane accepts for a lane's sleep CronJobs is what the API server accepts (issue 44, point 8): every
schedule and time zone below is judged by core.cron and by the real kube-apiserver (a server-side dry run of a
CronJob), and the two verdicts agree, case by case."""

from __future__ import annotations

import json
import random
import re

import pytest

from renderer.core import cron

pytestmark = [pytest.mark.cluster, pytest.mark.e2e]

TOKENS = {  # per field: valid and invalid spellings the parser treats differently
    "minute": ["0", "59", "60", "*", "?", "*/5", "*/0", "5/15", "1-5", "5-1", "1,2", "1,,2", ",", "-1", "+5", "L",
               "\u0661", "*-3", "1-2-3", "1/2/3", "a", "00", "0-59/60"],
    "hour": ["0", "23", "24", "*", "9-17", "*/2", "25"],
    "dom": ["1", "31", "0", "32", "*", "?", "L", "15W", "1-31"],
    "month": ["1", "12", "13", "0", "*", "jan", "DEC", "Jan-Mar", "foo", "mar/2"],
    "dow": ["0", "6", "7", "*", "?", "mon", "MON-FRI", "sun,sat", "1#2", "5L", "fri-mon", "Sun/2"],
}
WHOLE = ["0 20 * * 1-5", "@daily", "@hourly", "@yearly", "@annually", "@monthly", "@weekly", "@midnight", "@reboot",
         "@every 1h", "@every 1h30m", "@every 1d", "@every", "@every x", "CRON_TZ=UTC 0 0 * * *",
         "TZ=Europe/Berlin 0 0 * * *", "0 0 * *", "0 0 * * * *", "0 0 * * *\t", "0  0 * * *", "", " ",
         "0 0 * * MON-FRI", "0 0 1 * * 2026"]
ZONES = ["Europe/Berlin", "UTC", "Etc/UTC", "GMT", "US/Eastern", "EST5EDT", "Etc/GMT+5", "Asia/Kolkata",
         "America/Argentina/Buenos_Aires", "Mars/Olympus", "Local", "local", "europe/berlin", "Europe/Berlin/",
         "../etc", "-Europe", "A_Very_Long_Zone_Name/X", "Europe//Berlin", "Foo", " Europe/Berlin"]


def _schedules() -> list[str]:
    rng = random.Random(44)
    fields = list(TOKENS.values())
    generated = {" ".join(rng.choice(tokens) for tokens in fields) for _ in range(150)}
    for i, tokens in enumerate(fields):  # each token once, in an otherwise valid schedule
        for token in tokens:
            base = ["0", "0", "*", "*", "*"]
            base[i] = token
            generated.add(" ".join(base))
    return sorted(generated) + WHOLE


def _refused(cluster, namespace: str, specs: list[dict]) -> set[str]:
    objects = [{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"c-{i}", "namespace": namespace},
                "spec": {**spec, "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.37"}]}}}}}}
               for i, spec in enumerate(specs)]
    done = cluster.kubectl("apply", "--dry-run=server", "-f", "-", check=False, timeout=120,
                           input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    refused = set(re.findall(r'CronJob\.batch "(c-\d+)" is invalid', done.stderr))
    accepted = set(re.findall(r"cronjob\.batch/(c-\d+) (?:created|configured|unchanged) \(server dry run\)",
                              done.stdout))
    assert refused | accepted == {o["metadata"]["name"] for o in objects}, (done.stdout[-2000:], done.stderr[-2000:])
    return refused


def test_every_schedule_devlane_accepts_the_server_accepts_and_no_other(cluster, namespace):
    schedules = _schedules()
    refused = _refused(cluster, namespace, [{"schedule": s} for s in schedules])
    differ = [(s, cron.schedule_problem(s), f"c-{i}" in refused) for i, s in enumerate(schedules)
              if (cron.schedule_problem(s) is not None) != (f"c-{i}" in refused)]
    assert differ == [], differ
    assert 40 < len(refused) < len(schedules) - 20  # both verdicts well represented


def test_every_time_zone_devlane_accepts_the_server_accepts_and_no_other(cluster, namespace):
    refused = _refused(cluster, namespace, [{"schedule": "0 20 * * 1-5", "timeZone": z} for z in ZONES])
    differ = [(z, cron.time_zone_problem(z), f"c-{i}" in refused) for i, z in enumerate(ZONES)
              if (cron.time_zone_problem(z) is not None) != (f"c-{i}" in refused)]
    assert differ == [], differ
    assert "c-0" not in refused and f"c-{ZONES.index('Mars/Olympus')}" in refused
