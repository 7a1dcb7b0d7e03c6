"""The harvest controller hands its harvestsuite.network.allowDestinations to the engine it starts: a job
whose seeds are loopback addresses crawls the one network the setting allows and refuses the other, -5005
in crawl.log, never connected to. A real scheduler, controller and engine, as in production."""

from __future__ import annotations

from harvestdef.model.status import JobStatus


def test_the_engine_crawls_what_the_controllers_setting_allows_and_refuses_the_rest(harvesting, tmp_path):
    h = harvesting()
    allowed, refused = f"http://127.0.0.1:{h.site.port}/", f"http://127.0.0.2:{h.site.port}/"
    harvest_id = h.selective_harvest("loopback", {"127.0.0.1": [allowed], "127.0.0.2": [refused]})
    h.start_scheduler()
    controller = h.start_controller(**{"harvestsuite.network.allowDestinations": ["127.0.0.1/32"]})
    (job,) = h.wait_for_jobs(harvest_id, timeout=180)
    assert JobStatus(job.status) == JobStatus.DONE, (job, controller.text()[-3000:])
    objects = {row.name: row.objectcount for row in h.history(job.job_id)}
    assert objects["127.0.0.1"] > 0 and objects["127.0.0.2"] == 0, objects
    lines = [line.split() for path in tmp_path.glob("**/crawl.log") for line in path.read_text().splitlines()]
    assert [fields[1] for fields in lines if len(fields) > 3 and fields[3] == refused] == ["-5005"], lines
    assert [fields[11] for fields in lines if len(fields) > 11 and fields[3] == refused] == \
        ["destinationRefused:loopback"]
