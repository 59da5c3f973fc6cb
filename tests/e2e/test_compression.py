"""contract §7: data parquet files are zstd; another codec is a warning, not an error."""

import pyarrow.parquet as pq

from .checks import assert_finding, check_report, error_rules
from .fixtures import EpisodeSpec, write_task


def test_snappy_data_file_is_a_warning(run_reel, tmp_path):
    task = write_task(tmp_path, "t", [EpisodeSpec(1), EpisodeSpec(2)])
    data = task.path / task.ep(2).data_rel
    pq.write_table(pq.read_table(data), data, compression="snappy")
    rc, report = check_report(run_reel, task.path)
    assert rc == 0, error_rules(report)
    assert_finding(report, "data.compression", task.ep(2).data_rel, severity="warning")
    assert not [f for t in report["tasks"] for f in t["findings"]
                if f["rule"] == "data.compression" and f["path"].endswith(task.ep(1).data_rel)]
