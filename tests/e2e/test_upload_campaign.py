"""The short upload kill campaign (docs/upload.md "The kill campaign"; the full one is
`make soak-upload`): uploader and server SIGKILLed at random while `reel simulate` records and a
fault proxy cuts, stalls and slows the wire. Every count that must be 0 is 0, and the server
task checks clean."""

from __future__ import annotations

from .upload_campaign import run_campaign


def test_short_upload_kill_campaign(reel_bin, tmp_path):
    r = run_campaign(reel_bin, tmp_path, uploader_kills=20, server_kills=4, min_seconds=15, max_seconds=240,
                     say=lambda *_: None)
    assert r["uploader_kills"] >= 20 and r["server_kills"] >= 4, r
    assert r["episodes_recorded"] >= 5, r
    assert (r["lost"], r["duplicated"], r["deleted_unconfirmed"]) == (0, 0, 0), r
    assert r["check_exit"] == 0, r["check_output"]
    assert r["final_all_landed"], r
    assert set(r["job_states"]) <= {"confirmed", "pruned"}, r
