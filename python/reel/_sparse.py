"""Sparse columns (contract §7.2): a column exists in an episode only once the episode supplied
that key, so episodes of one task may carry different columns (an unstamped episode has no
``*_ns`` column at all, multi-device §8.1.3). Readers that give every episode the same columns
fill a column the episode lacks with the contract's "no sample" value, as the writer does for a
row without a sample: 0, [0]*d, [] or "connected"."""

from __future__ import annotations

from typing import Any, Iterable

import pyarrow as pa


def no_sample_array(type_: pa.DataType, n: int) -> pa.Array:
    """``n`` rows of the "no sample" value of a column of Arrow type ``type_``."""
    if pa.types.is_fixed_size_list(type_):
        values = no_sample_array(type_.value_type, n * type_.list_size)
        return pa.FixedSizeListArray.from_arrays(values, type_.list_size)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return pa.array([[]] * n, type_)
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return pa.array(["connected"] * n, type_)
    if pa.types.is_boolean(type_):
        return pa.array([False] * n, type_)
    return pa.array([0] * n, type_)


def read_filling(source: Any, episode_index: int, fields: Iterable[pa.Field]) -> pa.Table:
    """``source.data(episode_index, names)`` with the columns the episode lacks filled with
    their "no sample" value, in the order of ``fields``."""
    fields = list(fields)
    present = set(pa.RecordBatchReader.from_stream(source.data(episode_index)).schema.names)
    table = pa.table(source.data(episode_index, [f.name for f in fields if f.name in present]))
    columns = [table.column(f.name) if f.name in present else no_sample_array(f.type, table.num_rows)
               for f in fields]
    return pa.table(columns, names=[f.name for f in fields])
